#!/bin/sh
# "postgres [args...]" starts the server on the packaged cluster with any extra -c settings;
# anything else runs as given (e.g. a shell or "pg_isready").
set -e
if [ "$1" = "postgres" ]; then
	shift
	exec /usr/lib/postgresql/15/bin/postgres -D /var/lib/postgresql/15/main \
		-c config_file=/etc/postgresql/15/main/postgresql.conf "$@"
fi
exec "$@"
