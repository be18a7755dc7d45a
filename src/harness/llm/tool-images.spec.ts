import { CLEAR_PIXEL_GIF, RED_PIXEL_PNG } from './testing/tool-image-round';
import { followingImagesParts, imageDataUrl, imagesFollowNote, toolImagesOf } from './tool-images';

describe('toolImagesOf', () => {
  it('answers the images and the text of a tool message as they are when every image can be sent', () => {
    const message = { role: 'tool' as const, tool_call_id: 'call_1', content: 'shot', images: [RED_PIXEL_PNG, CLEAR_PIXEL_GIF] };
    expect(toolImagesOf(message)).toEqual({ images: [RED_PIXEL_PNG, CLEAR_PIXEL_GIF], text: 'shot' });
  });

  it('answers no images for a message without any, and an empty text for a null content', () => {
    expect(toolImagesOf({ role: 'tool', content: null })).toEqual({ images: [], text: '' });
  });

  it('normalizes media types: case, parameters, and image/jpg', () => {
    const images = [
      { mediaType: 'IMAGE/PNG', data: 'a' },
      { mediaType: 'image/jpg', data: 'b' },
      { mediaType: 'image/webp; q=1', data: 'c' },
    ];
    expect(toolImagesOf({ role: 'tool', content: '', images }).images).toEqual([
      { mediaType: 'image/png', data: 'a' },
      { mediaType: 'image/jpeg', data: 'b' },
      { mediaType: 'image/webp', data: 'c' },
    ]);
  });

  it('drops empty images, and names the types of those no model reads in the text', () => {
    const images = [
      { mediaType: 'image/svg+xml', data: 'PHN2Zy8+' },
      { mediaType: 'image/png', data: '' },
      { mediaType: 'image/svg+xml', data: 'PHN2Zz4=' },
      { mediaType: 'image/bmp', data: 'Qk0=' },
      RED_PIXEL_PNG,
    ];
    expect(toolImagesOf({ role: 'tool', content: 'drawn', images })).toEqual({
      images: [RED_PIXEL_PNG],
      text: 'drawn\n\n(3 images not shown (image/svg+xml, image/bmp): models read PNG, JPEG, GIF and WebP only.)',
    });
    expect(toolImagesOf({ role: 'tool', content: '', images: images.slice(0, 1) }).text).toBe(
      '(1 image not shown (image/svg+xml): models read PNG, JPEG, GIF and WebP only.)',
    );
  });
});

describe('imageDataUrl', () => {
  it('writes a base64 data URL', () => {
    expect(imageDataUrl(RED_PIXEL_PNG)).toBe(`data:image/png;base64,${RED_PIXEL_PNG.data}`);
  });
});

describe('imagesFollowNote', () => {
  it('counts the images in words', () => {
    expect(imagesFollowNote(1)).toBe('(1 image of this result follows after the tool results.)');
    expect(imagesFollowNote(3)).toBe('(3 images of this result follow after the tool results.)');
  });
});

describe('followingImagesParts', () => {
  it('labels each result\'s images with its call, under one header', () => {
    const parts = followingImagesParts([
      { message: { role: 'tool', tool_call_id: 'call_1', name: 'screenshot', content: '' }, images: [RED_PIXEL_PNG] },
      { message: { role: 'tool', tool_call_id: 'call_2', content: '' }, images: [CLEAR_PIXEL_GIF, RED_PIXEL_PNG] },
    ]);
    expect(parts).toEqual([
      { type: 'text', text: 'Images returned by the tool calls above:' },
      { type: 'text', text: 'Tool call call_1 (screenshot):' },
      { type: 'image', image: RED_PIXEL_PNG },
      { type: 'text', text: 'Tool call call_2:' },
      { type: 'image', image: CLEAR_PIXEL_GIF },
      { type: 'image', image: RED_PIXEL_PNG },
    ]);
  });
});
