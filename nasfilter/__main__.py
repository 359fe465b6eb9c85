import sys

from nasfilter.cli import main

sys.exit(main())
