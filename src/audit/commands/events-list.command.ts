import { Command, CommandRunner, Option } from 'nest-commander';
import { printJson } from '../../common/cli/output.js';
import { AuditTrailService } from '../audit-trail.service.js';
import { type EventQuery, readEventQuery } from '../event-query.js';

@Command({
  name: 'events:list',
  description: 'the audit trail, newest first: who changed what (an operator at the CLI, or a client through HTTP), never a secret',
})
export class EventsListCommand extends CommandRunner {
  constructor(private readonly audit: AuditTrailService) {
    super();
  }

  async run(_args: string[], options: EventQuery): Promise<void> {
    const events = await this.audit.list(readEventQuery(options));
    printJson(
      events.map((event) => ({ ...event, by: event.actor.kind === 'operator' ? `operator ${event.actor.name}` : `client ${event.actor.client_id}` })),
      ['id', 'at', 'by', 'action', 'username', 'client_id', 'target'],
    );
  }

  @Option({ flags: '--username <username>', description: "only events about this user (case-insensitive)" })
  parseUsername(value: string) {
    return value;
  }

  @Option({ flags: '--client <id>', description: 'only events about this client, or made by it through HTTP' })
  parseClient(value: string) {
    return value;
  }

  @Option({ flags: '--since <time>', description: 'only events from this time on: 2026-11-01, 2026-11-01T09:00:00Z, or 30m, 24h, 7d back from now' })
  parseSince(value: string) {
    return value;
  }

  @Option({ flags: '--limit <n>', description: 'at most this many, 1–1000 (default 100)' })
  parseLimit(value: string) {
    return value;
  }

  @Option({ flags: '--after <id>', description: "the next page: events older than this event id (the last one's id of the previous page)" })
  parseAfter(value: string) {
    return value;
  }
}
