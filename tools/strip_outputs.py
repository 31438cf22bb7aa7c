"""Strip outputs and execution counts from notebooks (run before committing)."""
import json
import sys
from pathlib import Path

for path in sys.argv[1:] or [str(p) for p in Path(".").glob("**/*.ipynb") if ".venv" not in p.parts]:
    nb = json.loads(Path(path).read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
    Path(path).write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
