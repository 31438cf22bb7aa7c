"""`python -m helpers.engine stop|status`: the machine's shared engine, from a terminal (bash guide.sh stop)."""
import sys

from helpers.engine.shared import main

raise SystemExit(main(sys.argv[1:]))
