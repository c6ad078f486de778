#!/bin/bash
# nvidia-ml-py, NVIDIA's pynvml as PyPI ships it (the release pinned in
# tests/go/versions.env, pip-installed by scripts/install-deps.sh into the
# venv /var/cache/mokka/venv-nvml), runs the same checks as Debian's
# python3-pynvml 11.525 does in nvml_pynvml.sh: every getter over every
# shipped profile, the fabric states and the a100-rich variant.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../nvidia_stack_lib.sh"

V=${MOKKA_NVML_VENV:-/var/cache/mokka/venv-nvml}
SP=$(ls -d "$V"/lib/python3*/site-packages 2>/dev/null | head -1)
[ -n "$SP" ] && [ -f "$SP/pynvml.py" ] || die "no nvidia-ml-py in $V (scripts/install-deps.sh)"
got=$(/usr/bin/python3 -c "import sys; sys.path.insert(0, '$SP'); import importlib.metadata as m; print(m.version('nvidia-ml-py'))" 2>&1)
check "nvidia-ml-py $NVIDIA_ML_PY_VERSION installed (got $got)" [ "$got" = "$NVIDIA_ML_PY_VERSION" ]
MOKKA_PYNVML_DIR=$SP bash "$S/tests/integration/nvml_pynvml.sh" > "$T/pynvml.out" 2>&1
rc=$?
grep -v '^#' "$T/pynvml.out" | sed 's/^/  /'
check "the pynvml checks pass over nvidia-ml-py $NVIDIA_ML_PY_VERSION" [ $rc -eq 0 ]
finish
