#!/bin/sh
# Same environment contract as the official "zookeeper" image, so one launcher serves both
# profiles: ZOO_MY_ID, ZOO_SERVERS ("server.1=zk-1:2888:3888;2181 server.2=..."),
# ZOO_TICK_TIME, ZOO_INIT_LIMIT, ZOO_SYNC_LIMIT, ZOO_STANDALONE_ENABLED,
# ZOO_4LW_COMMANDS_WHITELIST, ZOO_CFG_EXTRA (space-separated key=value), JVMFLAGS.
# "zkServer.sh start-foreground" (the official image's CMD) writes /conf/zoo.cfg and /data/myid (unless /conf/zoo.cfg was provided) and runs
# QuorumPeerMain in the foreground; "version" prints the ZooKeeper version; anything else runs as given.
set -e
CP=/conf:/usr/share/java/zookeeper.jar:/usr/share/java/zookeeper-jute.jar:/usr/share/java/slf4j-api.jar:/usr/share/java/slf4j-simple.jar
case "$1" in
version)
	exec java -cp "$CP" org.apache.zookeeper.version.VersionInfoMain
	;;
zkServer.sh)
	if [ ! -f /conf/zoo.cfg ]; then
		{
			echo "dataDir=/data"
			echo "dataLogDir=/datalog"
			echo "clientPort=2181"
			echo "tickTime=${ZOO_TICK_TIME:-2000}"
			echo "initLimit=${ZOO_INIT_LIMIT:-5}"
			echo "syncLimit=${ZOO_SYNC_LIMIT:-2}"
			echo "standaloneEnabled=${ZOO_STANDALONE_ENABLED:-true}"
			echo "4lw.commands.whitelist=${ZOO_4LW_COMMANDS_WHITELIST:-*}"
			echo "admin.enableServer=false"
			echo "quorumListenOnAllIPs=true"
			for kv in $ZOO_CFG_EXTRA; do echo "$kv"; done
			# No ZOO_SERVERS: a standalone server.
			for s in $ZOO_SERVERS; do echo "$s"; done
		} > /conf/zoo.cfg
	fi
	echo "${ZOO_MY_ID:-1}" > /data/myid
	# shellcheck disable=SC2086
	exec java -Dzookeeper.log.dir=/datalog $JVMFLAGS -cp "$CP" \
		org.apache.zookeeper.server.quorum.QuorumPeerMain /conf/zoo.cfg
	;;
esac
exec "$@"
