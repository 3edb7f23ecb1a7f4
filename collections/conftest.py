"""ansible_collections/ipu_k8s/cluster links back to the repository root (ansible.cfg finds the
collection ipu_k8s.cluster through it): a pytest run from the root does not walk into the loop."""

collect_ignore = ['ansible_collections']
