import sys

from grader.harness.serve import main

sys.exit(main())
