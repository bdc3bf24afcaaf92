#include "CDeviceIDSystem.h"

#include <errno.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#define PERM_ADDR_MAX 32

int dids_permanent_address(const char *ifname, unsigned char *out, size_t out_size) {
    if (ifname == NULL || out == NULL || strlen(ifname) >= IFNAMSIZ) return -EINVAL;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;

    /* struct ethtool_perm_addr ends in a flexible array: room for it follows the header. */
    union {
        struct ethtool_perm_addr header;
        unsigned char bytes[sizeof(struct ethtool_perm_addr) + PERM_ADDR_MAX];
    } request;
    memset(&request, 0, sizeof request);
    request.header.cmd = ETHTOOL_GPERMADDR;
    request.header.size = PERM_ADDR_MAX;

    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    strncpy(ifr.ifr_name, ifname, IFNAMSIZ - 1);
    ifr.ifr_data = (void *)&request;

    int result = ioctl(fd, SIOCETHTOOL, &ifr);
    int saved = errno;
    close(fd);
    if (result < 0) return -saved;
    if (request.header.size > PERM_ADDR_MAX || request.header.size > out_size) return -EOVERFLOW;
    memcpy(out, request.header.data, request.header.size);
    return (int)request.header.size;
}
