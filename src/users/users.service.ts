import { randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { MoreThan, type QueryDeepPartialEntity, type Repository } from 'typeorm';
import type { AuditAction } from '../audit/admin-change.js';
import { AuditTrailService } from '../audit/audit-trail.service.js';
import { conflict, foundOr, invalidInput, isUniqueViolation } from '../common/errors/app-error.js';
import { validateInput } from '../common/validation/validate-input.js';
import { SignOutsRepository } from '../grants/sign-outs.repository.js';
import { CreateUserDto, isPlausibleLogin, NewPasswordDto } from './dto/create-user.dto.js';
import { hashPassword, verifyPassword } from './password.js';
import { UserEntity, type UpstreamProfile } from './user.entity.js';

export interface UserView {
  id: string;
  username: string;
  /** The identity provider a brokered user signs in with; null for the service's own users. */
  provider: string | null;
  enabled: boolean;
  created_at: string;
}

/** A sign-in's user, or why there is none (which only the log may tell: the page says "wrong username or password"). */
export type Authentication = { user: UserEntity } | { refused: 'unknown_user' | 'wrong_password' | 'disabled_user'; userId?: string };

/** A change that ended the user's sign-ins: how many grants it revoked. */
export type SignedOutUser = UserView & { revoked_grants: number };

@Injectable()
export class UsersService {
  constructor(
    @InjectRepository(UserEntity) private readonly users: Repository<UserEntity>,
    private readonly signOuts: SignOutsRepository,
    private readonly audit: AuditTrailService,
  ) {}

  async create(input: { username?: string; password?: string }): Promise<UserView> {
    const dto = await validateInput(CreateUserDto, input);
    const user = this.users.create({ username: dto.username, passwordHash: await hashPassword(dto.password) });
    try {
      await this.users.manager.transaction(async (manager) => {
        await manager.insert(UserEntity, user);
        await this.audit.record(manager, { action: 'user.created', username: user.username });
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw conflict(`a user named "${dto.username}" already exists`);
      throw error;
    }
    return toView(user);
  }

  /** A page of portal users by id, after `after` (the admin API's list); never a password hash. */
  async page(after: string | undefined, limit: number): Promise<UserView[]> {
    return (await this.users.find({ where: after === undefined ? {} : { id: MoreThan(after) }, order: { id: 'ASC' }, take: limit })).map(toView);
  }

  /** Every portal user, oldest first; never a password hash. */
  async list(): Promise<UserView[]> {
    return (await this.users.find({ order: { createdAt: 'ASC' } })).map(toView);
  }

  /** The user with this username (case-insensitive); not_found otherwise. */
  async show(username: string): Promise<UserView> {
    return toView(await this.require(username));
  }

  /**
   * A new password, checked by the rules of create. The user's grants are revoked with it, as an
   * identity provider does on a reset: a password is changed because it may be known to someone
   * else, who may have signed a device in with it.
   */
  async setPassword(username: string, password: string): Promise<SignedOutUser> {
    const user = await this.require(username);
    if (user.upstreamIssuer) throw invalidInput(`${user.username} signs in through the identity provider ${user.provider}: a password is set there, not here`);
    const dto = await validateInput(NewPasswordDto, { password });
    const changed = await this.changeAndSignOut(user.id, { passwordHash: await hashPassword(dto.password) }, 'user.password_set');
    this.audit.tellAtCli('user.password_set', { reason: 'cli', username: changed.username, userId: changed.id, revokedGrants: changed.revoked_grants });
    return changed;
  }

  /** A disabled user cannot sign in, and their grants are revoked: their devices are signed out. */
  async disable(username: string): Promise<SignedOutUser> {
    const user = await this.require(username);
    // Disabling twice keeps the first date.
    const changed = await this.changeAndSignOut(user.id, { disabledAt: user.disabledAt ?? (() => 'now()') }, 'user.disabled');
    this.audit.tellAtCli('user.disabled', { reason: 'cli', username: changed.username, userId: changed.id, revokedGrants: changed.revoked_grants });
    return changed;
  }

  /** The user may sign in again; grants revoked meanwhile stay revoked. */
  async enable(username: string): Promise<UserView> {
    const user = await this.require(username);
    await this.users.manager.transaction(async (manager) => {
      await manager.update(UserEntity, { id: user.id }, { disabledAt: null });
      await this.audit.record(manager, { action: 'user.enabled', username: user.username });
    });
    this.audit.tellAtCli('user.enabled', { reason: 'cli', username: user.username, userId: user.id });
    return toView({ ...user, disabledAt: null });
  }

  /** The user with this username; not_found otherwise. */
  async require(username: string): Promise<UserEntity> {
    // A name no user can have (control characters, too long) is unknown without a query.
    return foundOr(isPlausibleLogin(username, '') ? await this.findByUsername(username) : null, `no user named "${username}"`);
  }

  private changeAndSignOut(id: string, changes: QueryDeepPartialEntity<UserEntity>, action: AuditAction): Promise<SignedOutUser> {
    return this.users.manager.transaction(async (manager) => {
      await manager.update(UserEntity, { id }, changes);
      const revokedGrants = await this.signOuts.signOut(manager, { userId: id });
      const changed = { ...toView(await manager.findOneByOrFail(UserEntity, { id })), revoked_grants: revokedGrants };
      await this.audit.record(manager, { action, username: changed.username, details: { revoked_grants: revokedGrants } });
      return changed;
    });
  }

  /**
   * The enabled user with this username and password, or why not. An unknown username costs the
   * same argon2 work as a wrong password, so timing does not reveal which usernames exist. A
   * disabled user is refused like a wrong password, after the same work: a sign-in page that said
   * "disabled" would tell a guesser that the password was right.
   */
  async authenticate(username: string, password: string): Promise<Authentication> {
    const user = await this.findByUsername(username);
    // A brokered user has no password here: refused after the same work as an unknown one.
    const valid = await verifyPassword(user?.passwordHash ?? (await this.decoyHash()), password);
    if (!user?.passwordHash) return { refused: 'unknown_user' };
    if (!valid) return { refused: 'wrong_password', userId: user.id };
    if (user.disabledAt) return { refused: 'disabled_user', userId: user.id };
    return { user };
  }

  /**
   * The portal user a provider's subject is, made at their first sign-in and linked by the
   * provider's issuer and `sub` only (an e-mail can be changed or reused, so it never links); the
   * profile claims are refreshed at each sign-in, and their update time moves when they changed.
   * Its username, `NAME:sub`, is a stable handle for the CLI; pages show the profile's name.
   */
  async linkUpstream(provider: { name: string; issuer: string }, subject: string, profile: UpstreamProfile): Promise<UserEntity> {
    try {
      return await this.upsertLinked(provider, `${provider.name}:${subject}`, subject, profile);
    } catch (error) {
      // Usernames compare case-insensitively, `sub` does not: two subjects differing in case only get apart.
      if (!isUniqueViolation(error)) throw error;
      return this.upsertLinked(provider, `${provider.name}:${subject}:${randomBytes(4).toString('hex')}`, subject, profile);
    }
  }

  private async upsertLinked(provider: { name: string; issuer: string }, username: string, subject: string, profile: UpstreamProfile): Promise<UserEntity> {
    const [row]: { id: string }[] = await this.users.query(
      `INSERT INTO portal_users (username, provider, upstream_issuer, upstream_subject, profile) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (upstream_issuer, upstream_subject) WHERE upstream_issuer IS NOT NULL
       DO UPDATE SET provider = EXCLUDED.provider, profile = EXCLUDED.profile,
         profile_updated_at = CASE WHEN portal_users.profile IS DISTINCT FROM EXCLUDED.profile THEN now() ELSE portal_users.profile_updated_at END
       RETURNING id`,
      [username, provider.name, provider.issuer, subject, profile],
    );
    return this.users.findOneByOrFail({ id: row.id });
  }

  private decoy?: Promise<string>;

  private decoyHash(): Promise<string> {
    this.decoy ??= hashPassword(randomBytes(16).toString('hex'));
    return this.decoy;
  }

  findById(id: string): Promise<UserEntity | null> {
    return this.users.findOneBy({ id });
  }

  /** Usernames compare case-insensitively, as the unique index does. */
  findByUsername(username: string): Promise<UserEntity | null> {
    return this.users.createQueryBuilder('user').where('lower(user.username) = lower(:username)', { username }).getOne();
  }
}

const toView = (user: UserEntity): UserView => ({
  id: user.id,
  username: user.username,
  // A user just created by user:create has no provider field yet: a local user.
  provider: user.provider ?? null,
  enabled: !user.disabledAt,
  created_at: user.createdAt.toISOString(),
});
