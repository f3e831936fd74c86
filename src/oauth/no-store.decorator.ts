import { applyDecorators, Header } from '@nestjs/common';

/** RFC 6749 §5.1: token responses must not be cached. */
export const NoStore = () => applyDecorators(Header('Cache-Control', 'no-store'), Header('Pragma', 'no-cache'));
