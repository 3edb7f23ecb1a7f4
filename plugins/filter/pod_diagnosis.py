# -*- coding: utf-8 -*-
"""Jinja filters that say why pods are not Ready, from the pod list kubernetes.core.k8s_info
returns (its `resources`): which pod, which container, and the reason the kubelet or the
scheduler gives (image pull back-off with the image and the kubelet's message, crash loop with
the last exit code, unschedulable with the scheduler's message, init containers too).

    until: __pods.resources | pods_unready(expected=1) | length == 0
    msg: "{{ __pods.resources | pods_diagnosis('the operator pods (app=x in ns)', expected=1) }}"
    __verify_seen: {network: "{{ __pods.resources | pods_ready_observation }}"}
"""

# Reasons that carry the image in their story: say which image.
IMAGE_REASONS = ('ImagePullBackOff', 'ErrImagePull', 'ErrImageNeverPull', 'InvalidImageName',
                 'ImageInspectError', 'RegistryUnavailable')


def _name(pod):
    metadata = pod.get('metadata') or {}
    return '/'.join(part for part in (metadata.get('namespace'), metadata.get('name', '?')) if part)


def _condition(pod, kind):
    return next((c for c in (pod.get('status') or {}).get('conditions') or [] if c.get('type') == kind), None)


def _text(*parts):
    return ': '.join(part.strip() for part in parts if part and part.strip())


def _terminated(terminated):
    """'exit code 1 (Error): message' of a terminated state."""
    reason = terminated.get('reason')
    return _text('exit code %s%s' % (terminated.get('exitCode', '?'), ' (%s)' % reason if reason else ''),
                 terminated.get('message'))


def _with_last(detail, last):
    """detail, then the last termination when there is one."""
    return detail + (', last ' + _terminated(last) if last else '')


def container_problem(status, spec_image=None, init=False):
    """Why one container status is not ready, or None when it is fine."""
    state = status.get('state') or {}
    last = (status.get('lastState') or {}).get('terminated')
    image = status.get('image') or spec_image
    restarts = status.get('restartCount') or 0
    if init and (state.get('terminated') or {}).get('exitCode') == 0:
        return None
    if not init and status.get('ready'):
        return None
    if 'waiting' in state:
        waiting = state['waiting'] or {}
        reason = waiting.get('reason') or 'Waiting'
        if reason in IMAGE_REASONS:
            return _text('%s of image %s' % (reason, image), waiting.get('message'))
        if reason == 'CrashLoopBackOff':
            return _text(_with_last('CrashLoopBackOff (%d restarts)' % restarts, last),
                         waiting.get('message') if not last else None)
        if reason in ('PodInitializing', 'ContainerCreating') and not waiting.get('message'):
            return reason
        return _text(_with_last(reason, last), waiting.get('message'))
    if 'terminated' in state:
        return 'terminated, ' + _terminated(state['terminated'] or {})
    if 'running' in state:
        if init:
            return 'still running'
        detail = 'running but not Ready (readiness probe failing?)'
        return _with_last(detail + ', %d restarts' % restarts, last) if restarts else detail
    return 'no state reported yet'


def _spec_images(pod, key):
    return {c.get('name'): c.get('image') for c in (pod.get('spec') or {}).get(key) or []}


def pod_problems(pod):
    """Lines saying why one pod is not Ready; [] when it is Ready or Succeeded."""
    status = pod.get('status') or {}
    phase = status.get('phase') or 'Unknown'
    name = _name(pod)
    if phase == 'Succeeded':
        return []
    ready = _condition(pod, 'Ready')
    if phase == 'Running' and ready and ready.get('status') == 'True':
        return []
    if (pod.get('metadata') or {}).get('deletionTimestamp'):
        return ['%s: terminating' % name]
    if phase == 'Failed':
        return [_text('%s: pod Failed' % name, status.get('reason'), status.get('message'))]
    scheduled = _condition(pod, 'PodScheduled')
    if scheduled and scheduled.get('status') == 'False':
        return [_text('%s: %s' % (name, scheduled.get('reason') or 'not scheduled'), scheduled.get('message'))]

    lines = []
    for status_key, spec_key, init in (('initContainerStatuses', 'initContainers', True),
                                       ('containerStatuses', 'containers', False)):
        images = _spec_images(pod, spec_key)
        for container in status.get(status_key) or []:
            problem = container_problem(container, images.get(container.get('name')), init)
            if problem:
                lines.append('%s %scontainer %s: %s' % (name, 'init ' if init else '', container.get('name', '?'),
                                                        problem))
        if init and lines:
            break  # the app containers wait for the init containers: their state adds nothing
    if lines:
        return lines
    if ready:
        return [_text('%s: %s, Ready=%s %s' % (name, phase, ready.get('status'), ready.get('reason') or ''),
                      ready.get('message'))]
    return ['%s: %s, no container status yet' % (name, phase)]


def pods_unready(pods, expected=1):
    """One line per pod (or container) that is not Ready, plus one when too few pods exist."""
    pods = pods or []
    lines = ['%d pod(s) found, %d expected' % (len(pods), int(expected))] if len(pods) < int(expected) else []
    return lines + [line for pod in pods for line in pod_problems(pod)]


def pods_diagnosis(pods, awaited, expected=1):
    """'<awaited>: N of M pods Ready' and one '- ' line per problem (empty problems: all Ready)."""
    pods = pods or []
    problems = pods_unready(pods, expected)
    head = '%s: %d of %d pod(s) Ready' % (awaited, sum(not pod_problems(pod) for pod in pods), len(pods))
    return head + ('; not Ready:\n' + '\n'.join('- ' + line for line in problems) if problems else '')


def pods_ready_observation(pods):
    """{ok, observed} of a verify row: at least one pod, every one Ready (or Succeeded)."""
    pods = pods or []
    unready = [lines for lines in map(pod_problems, pods) if lines]
    return {'ok': bool(pods) and not unready,
            'observed': '%d pods, %d not Ready%s' % (len(pods), len(unready), ': ' + '; '.join(
                line for lines in unready for line in lines) if unready else '')}


class FilterModule(object):
    def filters(self):
        return {'pods_unready': pods_unready, 'pods_diagnosis': pods_diagnosis,
                'pods_ready_observation': pods_ready_observation}
