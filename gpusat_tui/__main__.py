import sys

from gpusat_tui.cli import main

sys.exit(main())
