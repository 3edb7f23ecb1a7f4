"""plugins/module_utils/ipu_k8s_gpg.py on the records gpg prints: secret-key listings (`sec`/`ssb`),
several primary keys in one file, lower-case fingerprints, every refusal word for word. The
colon records are laid out as gpg 2.2 prints them (doc/DETAILS of GnuPG: field 10 of `fpr`
is the fingerprint)."""

from ansible_collections.ipu_k8s.cluster.plugins.module_utils.ipu_k8s_gpg import FINGERPRINT, key_problem, normalise, primary_fingerprints

DOCKER = '9DC858229FC7DD38854AE2D88D81803C0EBFCD88'
K8S = 'DE15B14486CD377B9E876E1A234654DA9A296436'
SUBKEY = 'D3306A018370199E527AE7997EA0A9C3F273FCD8'


def fpr(fingerprint):
    return 'fpr:::::::::%s:' % fingerprint


def test_secret_key_listing_gives_the_primary_key_not_the_secret_subkey():
    colons = '\n'.join(['sec:u:255:22:AAAA:1700000000:::u:::scESC:::+:::23::0:', fpr(DOCKER),
                        'ssb:u:255:18:BBBB:1700000000::::::e:::+:::23:', fpr(SUBKEY)])
    assert primary_fingerprints(colons) == [DOCKER]


def test_every_primary_key_of_a_file_in_order_in_upper_case():
    colons = '\n'.join(['pub:-:4096:1:A:1::::::scESA:', fpr(K8S.lower()), 'uid:-::::1::X::k8s <k8s@example>:',
                        'sub:-:4096:1:B:1::::::s:', fpr(SUBKEY), 'pub:-:4096:1:C:1::::::scESA:', fpr(DOCKER)])
    assert primary_fingerprints(colons) == [K8S, DOCKER]


def test_a_fingerprint_record_without_a_key_record_before_it_is_not_a_key():
    assert primary_fingerprints(fpr(DOCKER)) == []
    assert primary_fingerprints('\n'.join(['pub:-:4096:1:A:1::::::scESA:', fpr(DOCKER), fpr(K8S)])) == [DOCKER]


def test_fingerprints_are_forty_upper_case_hex_digits():
    assert FINGERPRINT.match(DOCKER)
    assert not FINGERPRINT.match(DOCKER.lower())
    assert not FINGERPRINT.match(DOCKER[:-1])
    assert not FINGERPRINT.match(DOCKER + '0')


def test_any_white_space_in_a_documented_fingerprint_goes():
    assert normalise('9dc8 5822\t9fc7\ndd38  854a e2d8 8d81 803c 0ebf cd88') == DOCKER


def test_refusals_word_for_word():
    assert key_problem([], [DOCKER], 'Release.key') == (
        'Release.key holds no OpenPGP public key (an error page, or a truncated download?).')
    assert key_problem([DOCKER, K8S], [DOCKER, SUBKEY.lower()], 'docker.asc') == (
        'docker.asc holds key %s, not the expected %s or %s.' % (K8S, DOCKER, SUBKEY))
    assert key_problem([K8S, SUBKEY], [DOCKER], 'docker.asc') == (
        'docker.asc holds key %s, %s, not the expected %s.' % (K8S, SUBKEY, DOCKER))


def test_any_of_the_expected_keys_is_accepted():
    assert key_problem([K8S], [DOCKER, K8S.lower()], 'k8s.asc') is None


def test_a_subkey_fingerprint_is_never_taken_for_a_primary_key_without_its_own():
    # a primary record whose fpr record is missing, followed by a subkey and its fpr
    assert primary_fingerprints('\n'.join(['pub:-:4096:1:A:1::::::scESA:', 'sub:-:4096:1:B:1::::::s:',
                                           fpr(SUBKEY)])) == []
    assert primary_fingerprints('\n'.join(['sec:u:255:22:A:1:::u:::scESC:', 'ssb:u:255:18:B:1::::::e:',
                                           fpr(SUBKEY)])) == []
