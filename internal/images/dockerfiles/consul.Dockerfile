# Consul server built from Consul's Go module (internal/images/consul-server), static, on the
# base so a shell and procps are there for exec-based checks. Paths follow the official
# image: data in /consul/data, config in /consul/config.
FROM {{PARENT}}
COPY consul /usr/local/bin/consul
RUN mkdir -p /consul/data /consul/config
EXPOSE 8300 8301 8302 8500
CMD ["consul", "agent", "-dev", "-client", "0.0.0.0"]
