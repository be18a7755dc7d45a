import { BadRequestException, ValidationPipe, type ValidationError } from '@nestjs/common';

/**
 * The request validation of interface.md: unknown fields rejected, wrong types and unknown enum
 * values answered with `400 {"message": "..."}` naming the field.
 */
export function createValidationPipe(): ValidationPipe {
  return new ValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    transform: true,
    exceptionFactory: (errors: ValidationError[]) =>
      new BadRequestException({ statusCode: 400, error: 'Bad Request', message: flatten(errors).join('; ') }),
  });
}

function flatten(errors: ValidationError[], parent = ''): string[] {
  return errors.flatMap((error) => {
    const field = parent ? `${parent}.${error.property}` : error.property;
    const own = Object.values(error.constraints ?? {}).map((text) =>
      text.startsWith(error.property) ? field + text.slice(error.property.length) : `${field}: ${text}`,
    );
    // Rules that word their failure alike (a range: integer, minimum, maximum) say it once.
    return [...new Set(own), ...flatten(error.children ?? [], field)];
  });
}
