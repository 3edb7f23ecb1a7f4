"""What a drain left behind, said so that a person can act (roles/ipu_k8s/tasks/drain.yml,
the one drain of playbooks/upgrade.yml and playbooks/remove-node.yml)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

# Pods a drain leaves by design (kubectl drain --ignore-daemonsets does the same): those of
# DaemonSets, the node's static (mirror) pods, and pods that have ended.
MIRROR_ANNOTATION = 'kubernetes.io/config.mirror'


def _owners(pod):
    return (pod.get('metadata') or {}).get('ownerReferences') or []


def ipu_k8s_drain_pods_left(pods):
    """'namespace/name (Kind owner)' of each pod a drain should have evicted and did not."""
    left = []
    for pod in pods:
        meta = pod.get('metadata') or {}
        if any(o.get('kind') == 'DaemonSet' for o in _owners(pod)):
            continue
        if MIRROR_ANNOTATION in (meta.get('annotations') or {}):
            continue
        if (pod.get('status') or {}).get('phase') in ('Succeeded', 'Failed'):
            continue
        owners = ', '.join('%s %s' % (o.get('kind'), o.get('name')) for o in _owners(pod))
        left.append('%s/%s%s' % (meta.get('namespace'), meta.get('name'), ' (%s)' % owners if owners else ''))
    return left


def ipu_k8s_drain_ipu_jobs(pods):
    """The IPUJobs (by name) that own any of the pods."""
    return sorted({o.get('name') for pod in pods for o in _owners(pod) if o.get('kind') == 'IPUJob'})


class FilterModule(object):
    def filters(self):
        return {'ipu_k8s_drain_pods_left': ipu_k8s_drain_pods_left, 'ipu_k8s_drain_ipu_jobs': ipu_k8s_drain_ipu_jobs}
