# etcd server built from etcd's Go module (internal/images/etcd-server), static, on the base
# so a shell and procps are there for exec-based checks.
FROM {{PARENT}}
COPY etcd /usr/local/bin/etcd
WORKDIR /var/lib/etcd
EXPOSE 2379 2380
CMD ["/usr/local/bin/etcd"]
