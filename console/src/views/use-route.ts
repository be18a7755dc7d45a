import { useEffect, useState } from 'preact/hooks';
import { parseRoute, type Route } from '../state/route';

/** The route of the URL's hash, following every change (links, back, forward). */
export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const onChange = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return route;
}
