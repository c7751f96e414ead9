# DynamoDB-compatible server: dynalite (npm, pure JavaScript, in memory) on Debian's nodejs 18,
# libfaketime for clock faults. The node_modules tree is installed on the host with `npm ci`
# from the lockfile beside server.js and cached (internal/images/npm.go).
FROM {{PARENT}}
RUN apt-get update \
 && apt-get install -y --no-install-recommends nodejs libfaketime \
 && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin
COPY dynalite /opt/dynalite
WORKDIR /opt/dynalite
EXPOSE 8000
CMD ["node", "/opt/dynalite/server.js"]
