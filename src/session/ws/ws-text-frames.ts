/** The first byte of a whole text frame: FIN set, opcode 1 (RFC 6455 §5.2). */
const FIN_TEXT = 0x81;
/** Payload lengths up to this fit in the frame's second byte. */
const MAX_SHORT_LENGTH = 125;
/** Marks a 16-bit length after the second byte. */
const LENGTH_16 = 126;
/** Marks a 64-bit length after the second byte. */
const LENGTH_64 = 127;
const MAX_16 = 0xffff;
const TWO_TO_32 = 0x1_0000_0000;

/** The size of a text frame's header for a payload of `bytes`. */
function headerSize(bytes: number): number {
  if (bytes <= MAX_SHORT_LENGTH) return 2;
  return bytes <= MAX_16 ? 4 : 10;
}

/**
 * Encodes texts as consecutive WebSocket text frames from a server (RFC 6455 §5.2): each one
 * whole (FIN set, opcode 1), unmasked — a server never masks — without extensions, its payload
 * the text's UTF-8. `byteLengths[i]` must be `Buffer.byteLength(texts[i])`, which the caller
 * already has (a length larger than the text's is refused; a smaller one would cut it). One
 * buffer for all of them, so that a turn's frames to one connection are one socket write instead
 * of two writes a frame (header and payload) through `ws`.
 */
export function encodeTextFrames(texts: readonly string[], byteLengths: readonly number[]): Buffer {
  let total = 0;
  for (const bytes of byteLengths) total += headerSize(bytes) + bytes;
  const buffer = Buffer.allocUnsafe(total);
  let offset = 0;
  for (let index = 0; index < texts.length; index++) {
    const bytes = byteLengths[index];
    buffer[offset++] = FIN_TEXT;
    if (bytes <= MAX_SHORT_LENGTH) {
      buffer[offset++] = bytes;
    } else if (bytes <= MAX_16) {
      buffer[offset++] = LENGTH_16;
      buffer.writeUInt16BE(bytes, offset);
      offset += 2;
    } else {
      buffer[offset++] = LENGTH_64;
      buffer.writeUInt32BE(Math.floor(bytes / TWO_TO_32), offset);
      buffer.writeUInt32BE(bytes % TWO_TO_32, offset + 4);
      offset += 8;
    }
    const written = buffer.write(texts[index], offset, bytes, 'utf8');
    if (written !== bytes) throw new RangeError(`a text frame's payload is ${written} bytes, not the ${bytes} given for it`);
    offset += written;
  }
  return buffer;
}
