import { useState } from 'preact/hooks';
import { useAction } from '../hooks.js';
import { ErrorNote } from './common.js';

/**
 * A Delete button that asks first ("Delete webhook receiver? Yes, delete / Cancel"). A refusal (CONFLICT: a router
 * still uses the record) shows the hub's own message under the button; the record stays.
 */
export function ConfirmDelete({
  what,
  name,
  note,
  disabled,
  onConfirm,
  onDeleted,
}: {
  /** integration, router, template: said in the question and the button's label */
  what: string;
  name: string;
  /** said after the question, e.g. that an operator re-creates a managed record */
  note?: string | undefined;
  disabled?: boolean | undefined;
  onConfirm: () => Promise<unknown>;
  onDeleted: () => void;
}) {
  const [asking, setAsking] = useState(false);
  const action = useAction();
  const confirm = async () => {
    const done = await action.run(async () => {
      await onConfirm();
      return true;
    });
    setAsking(false);
    if (done) onDeleted();
  };
  return (
    <div class="confirm-delete">
      {asking ? (
        <div role="group" aria-label={`Confirm deleting ${what} ${name}`} class="actions">
          <small>
            Delete {what} <strong>{name}</strong>?{note ? ` ${note}` : ''}
          </small>
          <button type="button" class="danger" disabled={action.pending} aria-busy={action.pending ? 'true' : undefined} onClick={confirm}>
            Yes, delete
          </button>
          <button type="button" class="secondary outline" disabled={action.pending} onClick={() => setAsking(false)}>
            Cancel
          </button>
        </div>
      ) : (
        <button
          type="button"
          class="secondary outline"
          disabled={disabled}
          aria-label={`Delete ${what} ${name}`}
          onClick={() => {
            action.clear();
            setAsking(true);
          }}
        >
          Delete
        </button>
      )}
      <ErrorNote error={action.error} />
    </div>
  );
}
