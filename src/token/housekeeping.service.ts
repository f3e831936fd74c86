// The scheduler moved to src/database/ (issue 35). This path stays only for
// src/notification/notification-retention.ts, whose room another branch reshapes: delete this
// file, and TokenModule's export of HousekeepingModule, once it imports ../database/ itself.
export { HousekeepingService, type Purge } from '../database/housekeeping.service.js';
