import { randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import { conflict, isUniqueViolation, notFound } from '../common/errors/app-error.js';
import { validateInput } from '../common/validation/validate-input.js';
import { CreateUserDto, isPlausibleLogin } from './dto/create-user.dto.js';
import { hashPassword, verifyPassword } from './password.js';
import { UserEntity } from './user.entity.js';

export interface UserView {
  id: string;
  username: string;
  created_at: string;
}

@Injectable()
export class UsersService {
  constructor(@InjectRepository(UserEntity) private readonly users: Repository<UserEntity>) {}

  async create(input: { username?: string; password?: string }): Promise<UserView> {
    const dto = await validateInput(CreateUserDto, input);
    const user = this.users.create({ username: dto.username, passwordHash: await hashPassword(dto.password) });
    try {
      await this.users.insert(user);
    } catch (error) {
      if (isUniqueViolation(error)) throw conflict(`a user named "${dto.username}" already exists`);
      throw error;
    }
    return toView(user);
  }

  /** Every portal user, oldest first; never a password hash. */
  async list(): Promise<UserView[]> {
    return (await this.users.find({ order: { createdAt: 'ASC' } })).map(toView);
  }

  /** The user with this username (case-insensitive); not_found otherwise. */
  async show(username: string): Promise<UserView> {
    // A name no user can have (control characters, too long) is unknown without a query.
    const user = isPlausibleLogin(username, '') ? await this.findByUsername(username) : null;
    if (!user) throw notFound(`no user named "${username}"`);
    return toView(user);
  }

  /**
   * The user with this username and password, or null. An unknown username costs the same
   * argon2 work as a wrong password, so timing does not reveal which usernames exist.
   */
  async authenticate(username: string, password: string): Promise<UserEntity | null> {
    const user = await this.findByUsername(username);
    const valid = await verifyPassword(user?.passwordHash ?? (await this.decoyHash()), password);
    return user && valid ? user : null;
  }

  private decoy?: Promise<string>;

  private decoyHash(): Promise<string> {
    this.decoy ??= hashPassword(randomBytes(16).toString('hex'));
    return this.decoy;
  }

  /** Usernames compare case-insensitively, as the unique index does. */
  findByUsername(username: string): Promise<UserEntity | null> {
    return this.users.createQueryBuilder('user').where('lower(user.username) = lower(:username)', { username }).getOne();
  }
}

const toView = (user: UserEntity): UserView => ({ id: user.id, username: user.username, created_at: user.createdAt.toISOString() });
