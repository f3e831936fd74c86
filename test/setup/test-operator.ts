import { setProcessActor } from '../../src/audit/actor.js';

// A test that calls a service directly (clients.create, users.disable) acts as an operator would
// at the CLI: the audit trail records it as operator "test". The CLI and the admin routes say who
// acts themselves, as in production.
setProcessActor({ kind: 'operator', name: 'test' });
