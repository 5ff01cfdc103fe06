"""TPC-DS through recsql, timed per query, beside Spark SQL on the same text and checked against it.

python -m tpcds.run --sf 1 [--compare-spark] [--check] [--repeat 3] [--only 1 14a ...] [--data tpcds-data]
"""

from __future__ import annotations

import sys

from tpcds.suite import TPCDS
from tpch.run import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], TPCDS))
