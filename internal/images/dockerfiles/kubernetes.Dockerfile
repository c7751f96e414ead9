# kube-apiserver and kube-controller-manager built from the Kubernetes Go modules
# (internal/images/kube-server), static, on the base so a shell is there for exec-based
# checks. The store's etcd runs from the etcd image.
FROM {{PARENT}}
COPY kube-apiserver kube-controller-manager /usr/local/bin/
WORKDIR /var/lib/kubernetes
EXPOSE 6443
CMD ["/usr/local/bin/kube-apiserver"]
