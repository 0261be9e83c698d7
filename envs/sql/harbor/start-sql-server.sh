#!/bin/sh
# Starts this container's MariaDB server unless one answers already, and waits until it does.
# An exported SQL task's container runs no service of its own (our task env and Harbor run
# their own command in it, not the image's): the `sql` client and the verifier call this first.
sock=/run/intercode-sql/mysqld.sock
answers() { mariadb-admin --socket=$sock --connect-timeout=2 ping >/dev/null 2>&1; }
answers && exit 0
setsid mariadbd --user=mysql </dev/null >>/var/log/intercode-mariadbd.log 2>&1 &
i=0
until answers; do
  i=$((i + 1))
  if [ $i -ge 240 ]; then
    echo "the SQL server did not start within 60 s (its log: /var/log/intercode-mariadbd.log)" >&2
    exit 1
  fi
  sleep 0.25
done
