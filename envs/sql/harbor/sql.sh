#!/bin/sh
# sql [mariadb client options] [database]: the MariaDB client (as root) on this container's
# server, started first when it is not running. E.g. `sql concert_singer -e 'SHOW TABLES'`.
/usr/local/lib/intercode/start-sql-server.sh || exit 1
exec mariadb --default-character-set=utf8mb4 "$@"
