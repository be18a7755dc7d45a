import { useEffect, useRef } from 'preact/hooks';

/**
 * The page's heading, focused when the page opens, so that keyboard and screen-reader users
 * start at the top of what changed (as they would after a full page load).
 */
export function usePageFocus<T extends HTMLElement>() {
  const heading = useRef<T>(null);
  useEffect(() => {
    heading.current?.focus({ preventScroll: true });
  }, []);
  return heading;
}
