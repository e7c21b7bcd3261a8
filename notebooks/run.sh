#!/usr/bin/env bash
# Execute every notebook in notebooks/ (or the ones given as arguments) headlessly, each on the
# kernel its metadata names (Deno for the TypeScript ones, python3 for 03-python), and fail on any
# cell error. Needs: Debian's python3-nbclient and python3-ipykernel; for the Deno notebooks, Deno
# (npm install -g deno) and a built library (npm run build); for the Python one, numpy and
# matplotlib (python3-numpy, python3-matplotlib) and a run (LOBES_RUN, or lobes-demo/run). Executed copies go to $LOBES_NOTEBOOK_OUT (default: a temporary folder);
# the notebooks in the repository are not modified.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${LOBES_PYTHON:-/usr/bin/python3}
"$PY" -c 'import nbclient, ipykernel' 2>/dev/null || { echo "notebooks: $PY lacks nbclient/ipykernel (apt-get install python3-nbclient python3-ipykernel)" >&2; exit 3; }
OUT=${LOBES_NOTEBOOK_OUT:-$(mktemp -d)}
if [ $# -gt 0 ]; then NOTEBOOKS=("$@"); else NOTEBOOKS=(notebooks/*.ipynb); fi
if grep -l '"name": "deno"' "${NOTEBOOKS[@]}" >/dev/null 2>&1; then
  command -v deno >/dev/null || { echo "notebooks: deno not found (npm install -g deno)" >&2; exit 3; }
  [ -f dist/index.js ] || { echo "notebooks: dist/index.js missing (npm run build)" >&2; exit 3; }
  "$PY" -c 'import jupyter_client.kernelspec as k, sys; sys.exit(0 if "deno" in k.find_kernel_specs() else 1)' || deno jupyter --install >/dev/null 2>&1
fi
"$PY" - "$OUT" "${NOTEBOOKS[@]}" <<'PY'
import sys, os, time, nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
out = sys.argv[1]
failed = False
for path in sys.argv[2:]:
    nb = nbformat.read(path, as_version=4)
    t = time.time()
    kernel = nb.metadata.get("kernelspec", {}).get("name", "deno")
    client = NotebookClient(nb, kernel_name=kernel, timeout=300, resources={"metadata": {"path": os.path.dirname(path)}})
    try:
        client.execute()
        status = "ok"
    except CellExecutionError as e:
        failed = True
        status = "FAILED: " + str(e).strip().splitlines()[-1][:300]
    nbformat.write(nb, os.path.join(out, os.path.basename(path)))
    print(f"notebooks: {path}: {status} ({time.time() - t:.1f} s)", flush=True)
print(f"notebooks: executed copies in {out}")
sys.exit(1 if failed else 0)
PY
