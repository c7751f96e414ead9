# ZooKeeper 3.8 from Debian's libzookeeper-java on the headless JRE (the "zookeeper" package
# would pull the full JRE with GTK), slf4j-simple so the server logs, libfaketime for clock faults.
FROM {{PARENT}}
RUN apt-get update \
 && apt-get install -y --no-install-recommends default-jre-headless libzookeeper-java libslf4j-java libfaketime \
 && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin \
 && mkdir -p /conf /data /datalog
COPY zk-entrypoint.sh /usr/local/bin/zk-entrypoint.sh
EXPOSE 2181 2888 3888
ENTRYPOINT ["/usr/local/bin/zk-entrypoint.sh"]
CMD ["zkServer.sh", "start-foreground"]
