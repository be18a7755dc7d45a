import { ApiProperty } from '@nestjs/swagger';
import { IsNotEmpty, IsString, MaxLength } from 'class-validator';

/** Body of `POST /api/sessions/:id/messages`. */
export class PostMessageDto {
  @ApiProperty({ minLength: 1, maxLength: 1_000_000, description: "The user's message." })
  @IsString()
  @IsNotEmpty()
  @MaxLength(1_000_000)
  content!: string;
}
