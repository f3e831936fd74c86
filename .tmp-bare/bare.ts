import 'reflect-metadata';
import { Controller, Get, Module, NotFoundException, Param, Query, Res } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';

@Controller()
class C {
  @Get('code/get/:id')
  get(@Param('id') id: string, @Query() q: Record<string, unknown>, @Res({ passthrough: true }) reply: any) {
    reply.status(404);
    return { error: 'not_found', error_description: 'no authorization code is available for this state' };
  }
  @Get('throw/:id')
  t() {
    throw new NotFoundException();
  }
}
@Module({ controllers: [C] })
class M {}
const app = await NestFactory.create(M, new FastifyAdapter(), { logger: false });
await app.listen(Number(process.env.P), '127.0.0.1');
console.log('ready');
