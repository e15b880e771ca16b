/** What a 404 on a list/watch path means: the resource it names, and where its CRD comes from. */
import { describe, expect, it } from 'vitest';
import { missingResourceMessage, resourceOfPath } from '../../src/kube/errors.js';

describe('resourceOfPath', () => {
  it.each([
    ['/apis/cert-manager.io/v1/certificates', { group: 'cert-manager.io', version: 'v1', plural: 'certificates' }],
    ['/apis/cert-manager.io/v1/namespaces/apps/issuers', { group: 'cert-manager.io', version: 'v1', plural: 'issuers' }],
    [
      '/apis/notify.certmgr.io/v1alpha1/notificationrouters?watch=1',
      { group: 'notify.certmgr.io', version: 'v1alpha1', plural: 'notificationrouters' },
    ],
    ['/api/v1/namespaces/ns/secrets', { group: '', version: 'v1', plural: 'secrets' }],
    ['/api/v1/secrets', { group: '', version: 'v1', plural: 'secrets' }],
    ['/x', undefined],
    ['/apis/cert-manager.io/v1/namespaces/apps/certificates/one', undefined],
  ])('%s', (path, want) => {
    expect(resourceOfPath(path)).toEqual(want);
  });
});

describe('missingResourceMessage', () => {
  it.each([
    [
      '/apis/cert-manager.io/v1/certificates',
      'cert-manager CRD certificates.cert-manager.io v1 not found (HTTP 404): install cert-manager in this cluster; retrying until it appears',
    ],
    [
      '/apis/acme.cert-manager.io/v1/namespaces/a/challenges',
      'cert-manager CRD challenges.acme.cert-manager.io v1 not found (HTTP 404): install cert-manager in this cluster; retrying until it appears',
    ],
    [
      '/apis/notify.certmgr.io/v1alpha1/namespaces/team/notificationproviders',
      "CRD notificationproviders.notify.certmgr.io v1alpha1 not found (HTTP 404): install certmgr-notify's CRDs (crds/ of the repository, or the Helm chart); retrying until it appears",
    ],
    [
      '/apis/example.com/v2/widgets',
      'CRD widgets.example.com v2 not found (HTTP 404): install the CRD in this cluster; retrying until it appears',
    ],
    ['/api/v1/secrets', 'resource v1 secrets not served by this apiserver (HTTP 404)'],
    ['/x', undefined],
  ])('%s', (path, want) => {
    expect(missingResourceMessage(path)).toBe(want);
  });
});
