"""The application-stack example: a Moodle web tier on a MysqlCluster (MariaDB), from two
small operators that declare KubePlus's relationship annotations, so that ``setpoint graph``,
``setpoint metrics`` and ``setpoint check`` see the stack whole (see README.md)."""
