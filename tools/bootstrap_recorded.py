"""Write ``setpoint/cluster/bootstrap/recorded.json``: the bootstrap writes as stored.

Usage: ``.venv/bin/python tools/bootstrap_recorded.py``. The full write path stores them;
``tests/cluster/test_bootstrap_recorded.py`` fails while the file is not what it stores.
"""

from __future__ import annotations

import orjson

from setpoint.cluster.apiserver import APIServer
from setpoint.cluster.bootstrap.recorded import PATH, record


def main() -> None:
    PATH.write_bytes(orjson.dumps(record(APIServer), option=orjson.OPT_APPEND_NEWLINE))


if __name__ == "__main__":
    main()
