# Shared by scripts/setup.sh and scripts/setup-llm.sh (sourced; needs PYTHON_BIN and die).

# Put the pinned wheels listed in requirements file $2 into directory $1, checked
# against their sha256 by pip. Extra pip flags follow. pip also looks in
# PIP_FIND_LINKS and its own cache; when a local PIP_FIND_LINKS directory holds every
# wheel, it is used alone (no network).
download_wheels() {
    local dest="$1" requirements="$2"
    shift 2
    local -a offline=()
    local dir
    for dir in ${PIP_FIND_LINKS:-}; do
        [[ -d "$dir" ]] && offline+=(--find-links "$dir")
    done
    mkdir -p "$dest"
    if ((${#offline[@]})) && PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 \
        "$PYTHON_BIN" -m pip download --quiet --no-input --no-deps --no-index "${offline[@]}" \
        --require-hashes -r "$requirements" -d "$dest" "$@" >/dev/null 2>&1; then
        return 0
    fi
    PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 \
        "$PYTHON_BIN" -m pip download --quiet --no-input --no-deps \
        --require-hashes -r "$requirements" -d "$dest" "$@" \
        || die "pip download of $(sed 's/ --hash=.*//' "$requirements" | paste -sd' ') failed (PyPI unreachable and the wheels neither in a PIP_FIND_LINKS directory nor in pip's cache?)"
}
