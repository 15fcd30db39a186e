import sys

from clinicalrag.cli import main

sys.exit(main())
