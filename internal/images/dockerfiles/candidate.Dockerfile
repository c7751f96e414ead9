# Candidates and the fenced resource: only the static splitbrain binary and a sticky /tmp
# (ADD extracts tmp.tar with its 1777 mode; COPY of a directory would not keep it).
FROM scratch
COPY splitbrain /splitbrain
ADD tmp.tar /
ENTRYPOINT ["/splitbrain"]
