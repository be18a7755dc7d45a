import { ParseIntPipe } from '@nestjs/common';

/** Parses a route's `:id` as a session id; one that is not a number is a session that does not exist (404). */
export const SESSION_ID_PIPE = new ParseIntPipe({ errorHttpStatusCode: 404 });
