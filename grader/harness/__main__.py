import sys

from grader.harness.main import main

sys.exit(main())
