# InterCode's NL2Bash image as it was built in 2023: FROM ubuntu:latest (22.04, jammy) and
# exactly its package list, with recommended packages. DEBIAN_FRONTEND is a build argument
# here, so unlike an ENV it is not left in the environment actions see.
ARG BASE=ubuntu:22.04
FROM ${BASE}
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y bash python3 psmisc bsdmainutils cron imagemagick dnsutils git tree net-tools iputils-ping coreutils curl cpio jq \
 && apt-get clean && rm -rf /var/lib/apt/lists/*
WORKDIR /
