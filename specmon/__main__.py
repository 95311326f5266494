"""`python -m specmon`."""

import sys

from specmon.cli import main

sys.exit(main())
