/** Records core/v1 Events about our objects (on status transitions). Failures are logged, never thrown. */
import type { CoreV1Api } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { describeKubeError } from './errors.js';

export interface InvolvedObject {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string | undefined;
  uid?: string | undefined;
  resourceVersion?: string | undefined;
}

export interface EventRecorder {
  record(obj: InvolvedObject, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void>;
}

export function k8sEventRecorder(core: CoreV1Api, opts: { component: string; instance: string; log: Logger }): EventRecorder {
  return {
    async record(obj, type, reason, message) {
      const namespace = obj.namespace || 'default';
      const now = new Date();
      try {
        await core.createNamespacedEvent({
          namespace,
          body: {
            metadata: { generateName: `${obj.name}.`, namespace },
            involvedObject: {
              apiVersion: obj.apiVersion,
              kind: obj.kind,
              name: obj.name,
              // spreads: client-node's V1ObjectReference takes a key only with a value
              ...(obj.namespace ? { namespace: obj.namespace } : {}),
              ...(obj.uid ? { uid: obj.uid } : {}),
              ...(obj.resourceVersion ? { resourceVersion: obj.resourceVersion } : {}),
            },
            type,
            reason,
            message: message.slice(0, 1024),
            source: { component: opts.component },
            reportingComponent: opts.component,
            reportingInstance: opts.instance,
            firstTimestamp: now,
            lastTimestamp: now,
            count: 1,
          },
        });
      } catch (e) {
        opts.log.warn(
          { error: describeKubeError(e), reason, object: `${obj.kind}/${obj.namespace ?? ''}/${obj.name}` },
          'could not record event',
        );
      }
    },
  };
}
