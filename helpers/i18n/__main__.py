"""python -m helpers.i18n extract | status | notebooks (helpers/i18n/catalogs.py)."""
import sys

from helpers.i18n.catalogs import main

sys.exit(main())
