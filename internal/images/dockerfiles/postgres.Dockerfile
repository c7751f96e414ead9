# PostgreSQL 15 from Debian, cluster 15/main created by the package's postinst, opened to the
# run network with trust auth (test clusters only), fsync off for speed, libfaketime for clock faults.
FROM {{PARENT}}
RUN apt-get update \
 && apt-get install -y --no-install-recommends postgresql-15 libfaketime \
 && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin \
 && printf "listen_addresses = '*'\nfsync = off\nsynchronous_commit = off\nfull_page_writes = off\n" >> /etc/postgresql/15/main/postgresql.conf \
 && printf "local all all trust\nhost all all 0.0.0.0/0 trust\nhost all all ::/0 trust\n" > /etc/postgresql/15/main/pg_hba.conf \
 && install -d -o postgres -g postgres -m 2775 /run/postgresql
COPY postgres-entrypoint.sh /usr/local/bin/postgres-entrypoint.sh
ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
USER postgres
EXPOSE 5432
STOPSIGNAL SIGINT
ENTRYPOINT ["/usr/local/bin/postgres-entrypoint.sh"]
CMD ["postgres"]
