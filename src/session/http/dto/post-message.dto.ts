import { IsNotEmpty, IsString, MaxLength } from 'class-validator';

/** Body of `POST /api/sessions/:id/messages`. */
export class PostMessageDto {
  @IsString()
  @IsNotEmpty()
  @MaxLength(1_000_000)
  content!: string;
}
