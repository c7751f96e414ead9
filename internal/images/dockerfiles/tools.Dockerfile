# Fault-injection sidecar: shares a target's network namespace and runs iptables / ip / ps
# through exec. PID 1 is "sleep infinity"; SIGKILL as stop signal so removal is instant.
FROM {{PARENT}}
RUN apt-get update \
 && apt-get install -y --no-install-recommends iptables iproute2 procps netcat-openbsd iputils-ping \
 && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin
STOPSIGNAL SIGKILL
CMD ["sleep", "infinity"]
