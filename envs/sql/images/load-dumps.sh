#!/bin/sh
# Loads every *.sql file of $1 (in name order) into a fresh MariaDB data directory, then
# creates the harness's account and the agents' roles. A dump that fails prints one line
#   intercode-dump-failed <file> <mariadb client error, with its line number>
# and the build stops.
set -eu
dir=$1
sock=/tmp/intercode-build.sock
mariadb-install-db --user=mysql --datadir=/var/lib/mysql --auth-root-authentication-method=socket --skip-test-db >/dev/null
mariadbd --user=mysql --socket=$sock --skip-networking --skip-log-error >/tmp/mariadbd.log 2>&1 &
for i in $(seq 1 120); do
  mariadb-admin --socket=$sock ping >/dev/null 2>&1 && break
  sleep 0.25
done
# The dumps are UTF-8, as MySQL 8's client (InterCode's loader) read them. MariaDB's client
# takes its character set from the locale, which this image lacks (latin1): it would store
# `2000–2008` in a column name as `2000â€“2008` and 'Raúl' as 'RaÃºl'.
sql() { mariadb --socket=$sock --default-character-set=utf8mb4 --batch --skip-column-names "$@"; }
for dump in "$dir"/*.sql; do
  name=$(basename "$dump")
  if ! sql <"$dump" 2>/tmp/dump-error; then
    reason=$(grep -m 1 '^ERROR' /tmp/dump-error || head -n 1 /tmp/dump-error)
    echo "intercode-dump-failed $name $reason"
    exit 1
  fi
  # InterCode's dumps each create the same admin user; the env never uses it.
  sql -e "DROP USER IF EXISTS 'admin'@'%'"
  echo "loaded $name"
done
# Table statistics now, in the image: otherwise the first query to open a table computes
# them, and a query with ties (ORDER BY count(*) LIMIT 1) can pick another row before
# than after, so the same query would give two answers in one container's life.
mariadb-check --socket=$sock --analyze --all-databases --silent
# The harness's account, and the two roles agent accounts get. The harness (mariadb/server.ts)
# connects as intercode_admin only, and gives each agent session an account of its own
# (random name and password) with one of the roles: intercode_reader reads every database the
# dumps made (the default), intercode_writer may change anything in them (writable mode,
# where each episode has a server of its own). No agent account is ever shared or reused, so
# nothing one session does to its account (SET PASSWORD, SET DEFAULT ROLE) reaches another.
sql -e "CREATE USER 'intercode_admin'@'localhost' IDENTIFIED BY 'intercode_admin'"
sql -e "GRANT ALL PRIVILEGES ON *.* TO 'intercode_admin'@'localhost' WITH GRANT OPTION"
sql -e "CREATE ROLE intercode_reader WITH ADMIN 'intercode_admin'@'localhost'"
sql -e "CREATE ROLE intercode_writer WITH ADMIN 'intercode_admin'@'localhost'"
for db in $(sql -e "SELECT schema_name FROM information_schema.schemata WHERE schema_name NOT IN ('mysql','information_schema','performance_schema','sys')"); do
  sql -e "GRANT SELECT, SHOW VIEW ON \`$db\`.* TO intercode_reader"
  sql -e "GRANT ALL PRIVILEGES ON \`$db\`.* TO intercode_writer"
done
mariadb-admin --socket=$sock shutdown
wait
