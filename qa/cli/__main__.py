"""`python -m qa.cli ...`: the `kgqa` command."""

import sys

from qa.cli import main

sys.exit(main())
