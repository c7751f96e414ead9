# Redis 7.0 from Debian; listens on every address, protected mode and persistence off.
FROM {{PARENT}}
RUN apt-get update \
 && apt-get install -y --no-install-recommends redis-server \
 && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin
WORKDIR /var/lib/redis
EXPOSE 6379
CMD ["redis-server", "--bind", "0.0.0.0", "--protected-mode", "no", "--save", "", "--appendonly", "no"]
