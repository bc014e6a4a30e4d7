"""``python -m bench.compare``: see bench.compare.harness."""

import sys

from bench.compare.harness import main

sys.exit(main())
